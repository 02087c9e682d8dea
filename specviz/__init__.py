"""specviz: the speculative-decoding design space, from closed forms to serving stacks under load."""
