"""Renderers: markdown blocks and documents, JSON, HTML with plots."""
