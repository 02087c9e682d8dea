"""Our speculative-decoding engine (torch): sampling, decoding, models, train, card, bench, calibrate; no UI or database
stack."""
