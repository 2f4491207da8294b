"""Task handlers: PYTHON, SQL, BUSINESS_RULES and EMAIL_ALERT."""
