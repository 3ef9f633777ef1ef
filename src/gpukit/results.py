"""What a training run returns: one :class:`TrainResult`, with an :class:`EpochStats` per epoch,
and :func:`describe_run`, the line that says a run's data and settings.

Every training function of gpukit (:mod:`gpukit.training`, :func:`gpukit.fast.train_fast`)
returns a :class:`TrainResult`; ``from gpukit.training import TrainResult`` works too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from gpukit._checks import check_choice, check_int, check_number
from gpukit.timing import format_seconds

__all__ = ["EpochStats", "TrainResult", "describe_run"]

#: The learning-rate schedules (:data:`gpukit.training.SCHEDULES`, documented there), each with
#: the words a summary prints for it.
SCHEDULES = {"constant": "", "warmup-cosine": "warm-up + cosine decay"}


@dataclass(frozen=True, kw_only=True)
class EpochStats:
    """What one epoch measured.

    Attributes:
        epoch: 1 for the first epoch.
        train_loss: mean training loss over the epoch's examples.
        train_acc: fraction of the epoch's training examples classified correctly.
        test_acc: test accuracy after the epoch.
        seconds: time spent training (evaluation excluded).
        lr: the learning rate of the epoch's last step (it changes under a schedule).
    """

    epoch: int
    train_loss: float
    train_acc: float
    test_acc: float
    seconds: float
    lr: float | None = None


@dataclass(kw_only=True)
class TrainResult:
    """The numbers of one training run, for a page to print, plot or compare.

    Attributes:
        test_acc: test accuracy after the last epoch.
        sec_per_epoch: mean training time per epoch (evaluation excluded).
        devices: the devices that really computed, e.g. ``["cuda:0", "cuda:1"]``.
        epochs: number of epochs.
        n_train: training examples per epoch.
        n_test: test examples.
        batch_size: examples per optimisation step, over all devices together.
        lr: learning rate (its peak, under a schedule).
        history: one :class:`EpochStats` per epoch.
        note: how the devices were used, when that needs saying.
        schedule: the learning-rate schedule, a key of :data:`gpukit.training.SCHEDULES`.
        compile_seconds: time spent compiling before the first epoch
            (:func:`gpukit.fast.train_fast`), not counted in ``sec_per_epoch``.

    Example:
        >>> r = TrainResult(test_acc=0.8512, sec_per_epoch=12.34561, devices=["cuda:0", "cuda:1"],
        ...                 epochs=10, n_train=60000, n_test=10000, batch_size=512, lr=0.2)
        >>> print(r.summary())
        test acc 0.85, 12.3456 sec/epoch on [cuda:0, cuda:1]
        60,000 training / 10,000 test images, batch 512, lr 0.2, 10 epochs
    """

    test_acc: float
    sec_per_epoch: float
    devices: list[str]
    epochs: int
    n_train: int
    n_test: int
    batch_size: int
    lr: float
    history: list[EpochStats] = field(default_factory=list)
    note: str = ""
    schedule: str = "constant"
    compile_seconds: float = 0.0

    @property
    def images_per_sec(self) -> float:
        """The training images an epoch went through per second of its training time.

        Example:
            >>> TrainResult(test_acc=0.85, sec_per_epoch=2.0, devices=["cpu"], epochs=1,
            ...             n_train=60000, n_test=10000, batch_size=256, lr=0.1).images_per_sec
            30000.0
        """
        return self.n_train / self.sec_per_epoch

    def summary(self) -> str:
        """Two lines: accuracy, time and devices; then the amount of data and the settings."""
        note = f" ({self.note})" if self.note else ""
        first = f"test acc {self.test_acc:.2f}, {format_seconds(self.sec_per_epoch)}/epoch"
        settings = describe_run(
            n_train=self.n_train,
            n_test=self.n_test,
            batch_size=self.batch_size,
            lr=self.lr,
            schedule=self.schedule,
            epochs=self.epochs,
        )
        return f"{first} on [{', '.join(self.devices)}]{note}\n{settings}"


#: The sentence of :func:`describe_run`, whose parts the site's Chinese pages translate.
RUN_TEMPLATE = (
    "{n_train:,} training / {n_test:,} test images{size}, batch {batch_size}, "
    "lr {lr:g}{schedule}, {epochs} {epoch_word}"
)


def describe_run(
    *,
    n_train: int,
    n_test: int,
    batch_size: int,
    lr: float,
    schedule: str,
    epochs: int,
    resize: int | None = None,
    translate: Callable[[str], str] = str,
) -> str:
    """The data and settings of a run in one line, as summaries and workloads print them.

    ``translate`` maps each English phrase (``RUN_TEMPLATE``, the image size, the schedule,
    the word for epochs) to the reader's language: the site's build passes its gettext.

    Example:
        >>> print(describe_run(n_train=6_000, n_test=1_000, batch_size=64, lr=0.1,
        ...                    schedule="warmup-cosine", epochs=2))
        6,000 training / 1,000 test images, batch 64, lr 0.1 (warm-up + cosine decay), 2 epochs
    """
    for value, name in ((n_train, "n_train"), (n_test, "n_test"), (batch_size, "batch_size")):
        check_int(value, name)
    check_int(epochs, "epochs")
    check_number(lr, "lr")
    check_choice(schedule, "schedule", SCHEDULES)
    if resize is not None:
        check_int(resize, "resize")
    schedule_words = SCHEDULES[schedule] and translate(" ({schedule})").format(
        schedule=translate(SCHEDULES[schedule])
    )
    size = "" if resize is None else translate(" of {side}x{side} pixels").format(side=resize)
    return translate(RUN_TEMPLATE).format(
        n_train=n_train,
        n_test=n_test,
        size=size,
        batch_size=batch_size,
        lr=lr,
        schedule=schedule_words,
        epochs=epochs,
        epoch_word=translate("epochs" if epochs != 1 else "epoch"),
    )
