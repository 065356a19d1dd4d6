"""Full-stack emulator of an outreach platform: public API, reference CRM and exporter."""

__version__ = "0.1.0"
