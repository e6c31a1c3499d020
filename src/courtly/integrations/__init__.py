"""courtly's frontier inside other crawling frameworks (``courtly.integrations.scrapy``)."""
