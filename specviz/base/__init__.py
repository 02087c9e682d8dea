"""The bottom layer, standard library and Babel only: messages in two languages, settings, access, paths.

``i18n`` and ``catalogues`` (the two languages), ``settings`` and ``hosting`` (deployment), ``access``
(roles), ``machine`` (the host) and ``paths`` (where the repository's files are)."""
