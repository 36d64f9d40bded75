"""Maintenance scripts that work only in a checkout (they read data/ and write the shipped router): rebuild the
shipped router (`python -m scripts.build_default_router`), its transformer variants, and migrations of older
router folders. Not shipped in the wheel."""
