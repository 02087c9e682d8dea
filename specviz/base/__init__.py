"""The bottom layer: messages in two languages (``i18n``), deployment settings (``hosting``), the host
machine (``machine``) and where the repository's files are (``paths``). Standard library only."""
