"""Train the bundled byte-level draft/target pair on the CPython standard library (``python -m specviz train``)."""

from specviz.engine.train.checkpoint import load_checkpoint, save_checkpoint
from specviz.engine.train.config import (
    BF16_CPU_FLAGS,
    DRAFT,
    PRECISIONS,
    STORAGE_DTYPE,
    TARGET,
    TrainConfig,
    auto_precision,
    native_bf16,
)
from specviz.engine.train.data import SEPARATOR, batch, corpus_files, load_bytes, make_prompts, stdlib_root
from specviz.engine.train.distil import DistilConfig, Teacher, cached_teacher, lm_loss, teacher_outputs
from specviz.engine.train.loop import (
    evaluate,
    evaluate_all,
    learning_rate,
    optimizer,
    train_model,
    train_one,
    train_step,
)
from specviz.engine.train.unlikelihood import (
    UnlikelihoodConfig,
    repeated_ngram_mask,
    unlikelihood_loss,
    unlikelihood_step,
)

__all__ = [
    "BF16_CPU_FLAGS",
    "DRAFT",
    "PRECISIONS",
    "SEPARATOR",
    "STORAGE_DTYPE",
    "TARGET",
    "DistilConfig",
    "Teacher",
    "TrainConfig",
    "UnlikelihoodConfig",
    "auto_precision",
    "batch",
    "cached_teacher",
    "corpus_files",
    "evaluate",
    "evaluate_all",
    "learning_rate",
    "lm_loss",
    "load_bytes",
    "load_checkpoint",
    "make_prompts",
    "native_bf16",
    "optimizer",
    "repeated_ngram_mask",
    "save_checkpoint",
    "stdlib_root",
    "teacher_outputs",
    "train_model",
    "train_one",
    "train_step",
    "unlikelihood_loss",
    "unlikelihood_step",
]
