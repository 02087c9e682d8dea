"""Our speculative-decoding engine (torch): the verification rule (``sampling``), the decoding loops
(``decoding``), the models (``models``: the bundled pair, GGUF export, the Hugging Face adapter, the n-gram
drafter), training (``train``) and the model card (``card``), the bench (``bench``) and the calibration
microbenchmarks (``calibrate``). No UI or database stack: the CLI and the GPU tier run where only torch,
numpy and pandas are installed."""
