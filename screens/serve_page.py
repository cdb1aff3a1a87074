"""The page `serve` hands a browser: textual-serve's, saying "starting…" until the app's first output arrives."""

from pathlib import Path

TEMPLATES = Path(__file__).resolve().parent / "serve_templates"  # app_index.html, textual-serve's one template
