"""Renderers: text, Markdown and JSON for every report kind. They return text, never write."""
