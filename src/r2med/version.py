"""r2med's version: a leaf module (it imports nothing), so that every layer can name it without importing the
package's public API (``r2med/__init__.py``, the top of the house)."""

__version__ = "0.1.0"
