"""The names of the text trace formats, apart from `formats.py` (which loads the native core) so that
modules `--help` imports can name them."""

TEXT_FORMATS = ("commands", "monitor", "keys")
