"""Tests of gpukit.training: the loops on one device, nn.DataParallel and DDP processes."""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys

import pytest
import torch
from torch import nn

from gpukit import training
from gpukit.data import DataNotFoundError, find_fashion_mnist, load_data_fashion_mnist
from gpukit.models import lenet
from gpukit.profiles import PROFILES, Workload
from gpukit.training import (
    EpochStats,
    TrainResult,
    lr_factor,
    sgd,
    train_ch6,
    train_data_parallel,
    train_ddp,
)


def _real_data_available() -> bool:
    try:
        find_fashion_mnist(download=False)
    except DataNotFoundError:
        return False
    return True


needs_data = pytest.mark.skipif(
    not _real_data_available(), reason="Fashion-MNIST is not on this machine"
)


def _toy_batches(n: int = 40, batch: int = 8, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, 1, 28, 28, generator=g)
    y = torch.arange(n) % 10
    return [(X[i : i + batch], y[i : i + batch]) for i in range(0, n, batch)]


def _numbers(result: TrainResult) -> list[tuple[float, float, float]]:
    """Everything a run computes except the times."""
    return [(s.train_loss, s.train_acc, s.test_acc) for s in result.history]


# ---------------------------------------------------------------- TrainResult and sgd


RUN = {
    "test_acc": 0.81,
    "sec_per_epoch": 2.5,
    "devices": ["cpu"],
    "epochs": 2,
    "n_train": 2000,
    "n_test": 1000,
    "batch_size": 16,
    "lr": 0.3,
}


def test_summary_names_devices_data_and_settings():
    history = [
        EpochStats(epoch=1, train_loss=0.9, train_acc=0.6, test_acc=0.7, seconds=2.0),
        EpochStats(epoch=2, train_loss=0.5, train_acc=0.8, test_acc=0.81, seconds=3.0),
    ]
    result = TrainResult(**RUN, history=history, note="why")
    assert result.summary() == (
        "test acc 0.81, 2.5000 sec/epoch on [cpu] (why)\n"
        "2,000 training / 1,000 test images, batch 16, lr 0.3, 2 epochs"
    )
    one = dataclasses.replace(result, epochs=1, note="")
    assert one.summary().endswith("lr 0.3, 1 epoch") and "(" not in one.summary()


def test_summary_names_a_schedule():
    result = TrainResult(**RUN, schedule="warmup-cosine")
    assert result.summary().endswith("lr 0.3 (warm-up + cosine decay), 2 epochs")


def test_results_are_built_by_name():
    # Twelve fields in a row are easy to misplace: a positional call is refused.
    with pytest.raises(TypeError):
        TrainResult(0.81, 2.5, ["cpu"], 2, 2000, 1000, 16, 0.3)
    with pytest.raises(TypeError):
        EpochStats(1, 0.9, 0.6, 0.7, 2.0)


def test_lr_factor_warms_up_over_the_first_epoch_then_decays_to_zero():
    factors = [lr_factor("warmup-cosine", step, 10, 4) for step in range(40)]
    assert factors[0] == pytest.approx(0.1) and factors[10] == pytest.approx(1.0)
    assert all(a < b for a, b in itertools.pairwise(factors[:11]))  # warm-up
    assert all(a > b for a, b in itertools.pairwise(factors[10:]))  # decay
    assert factors[25] == pytest.approx(0.5) and 0 < factors[-1] < 0.01
    assert [lr_factor("constant", step, 10, 4) for step in range(40)] == [1.0] * 40
    # One epoch: only the warm-up; more steps than announced: the decay stays at 0.
    assert lr_factor("warmup-cosine", 9, 10, 1) == pytest.approx(0.91)
    assert lr_factor("warmup-cosine", 99, 10, 2) == pytest.approx(0.0)


def test_sgd_matches_d2l_and_zeroes_gradients():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * torch.tensor([4.0, 8.0])).sum().backward()
    sgd([w], lr=0.5, batch_size=4)
    assert w.tolist() == [0.5, 1.0] and w.grad.tolist() == [0.0, 0.0]
    net = torch.nn.Linear(1, 1, bias=False)
    net(torch.ones(1, 1)).sum().backward()
    sgd(net.parameters(), lr=1.0, batch_size=1)  # a generator, as D2L's readers pass it
    assert net.weight.grad.item() == 0.0


@pytest.mark.parametrize(
    ("lr", "batch_size", "error", "match"),
    [
        (0, 4, ValueError, "lr must be"),
        (float("inf"), 4, ValueError, "lr must be"),
        ("0.1", 4, TypeError, "lr must be"),
        (0.1, 0, ValueError, "batch_size must be"),
        (0.1, 2.0, TypeError, "batch_size must be"),
    ],
)
def test_sgd_bad_arguments(lr, batch_size, error, match):
    with pytest.raises(error, match=match):
        sgd([torch.zeros(1, requires_grad=True)], lr, batch_size)


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (3, "params must be a list"),
        (torch.zeros(2), "params must be a list"),
        ([1.0], r"params\[0\]"),
    ],
)
def test_sgd_bad_params(params, match):
    with pytest.raises(TypeError, match=match):
        sgd(params, 0.1, 8)


def test_sgd_needs_gradients():
    with pytest.raises(ValueError, match="gradients"):
        sgd([torch.zeros(1, requires_grad=True)], 0.1, 1)


# ---------------------------------------------------------------- one process, toy data


def test_train_ch6_result_and_reproducibility(capsys):
    batches = _toy_batches()
    first = train_ch6(lenet(), batches, batches[:2], 2, 0.1, "cpu", plot=True)
    printed = capsys.readouterr().out
    assert printed.startswith("test acc ") and "sec/epoch on [cpu]" in printed
    assert "40 training / 16 test images, batch 8, lr 0.1, 2 epochs" in printed
    assert (first.epochs, first.n_train, first.n_test, first.batch_size) == (2, 40, 16, 8)
    assert first.devices == ["cpu"] and len(first.history) == 2
    assert first.test_acc == first.history[-1].test_acc
    assert first.sec_per_epoch > 0
    # Whatever the network held and whatever the global generator was, the run is the same.
    torch.manual_seed(123)
    again = train_ch6(lenet(), batches, batches[:2], 2, 0.1, "cpu", plot=False, verbose=False)
    assert _numbers(again) == _numbers(first)


@pytest.mark.parametrize("schedule", ["constant", "warmup-cosine"])
def test_train_ch6_follows_the_schedule(schedule):
    batches = _toy_batches()  # 5 steps per epoch
    result = train_ch6(
        lenet(), batches, batches[:1], 3, 0.2, "cpu", schedule=schedule, plot=False, verbose=False
    )
    last_steps = [4, 9, 14]
    assert [s.lr for s in result.history] == pytest.approx(
        [0.2 * lr_factor(schedule, step, 5, 3) for step in last_steps]
    )
    assert result.schedule == schedule


def test_train_ch6_keeps_weights_when_init_is_none():
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
    with torch.no_grad():
        net[1].weight.zero_()
        net[1].bias.zero_()
    # lr is tiny, so the weights stay close to the zeros they were given.
    train_ch6(net, _toy_batches(), _toy_batches(), 1, 1e-6, "cpu", init=None, plot=False)
    assert net[1].weight.abs().max() < 1e-5


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"net": "net"}, TypeError, "net must be"),
        ({"train_iter": 5}, TypeError, "train_iter must be"),
        ({"test_iter": torch.zeros(3)}, TypeError, "test_iter must be"),
        ({"num_epochs": 0}, ValueError, "num_epochs must be >= 1"),
        ({"lr": -0.1}, ValueError, "lr must be"),
        ({"device": 7}, TypeError, "device must be"),
        ({"init": "zeros"}, ValueError, "init must be"),
        ({"seed": None}, TypeError, "seed must be"),
    ],
)
def test_train_ch6_bad_arguments(change, error, match):
    kwargs = {
        "net": lenet(),
        "train_iter": _toy_batches(),
        "test_iter": _toy_batches(),
        "num_epochs": 1,
        "lr": 0.1,
        "device": "cpu",
        "plot": False,
    }
    with pytest.raises(error, match=match):
        train_ch6(**{**kwargs, **change})


def test_train_data_parallel_reports_the_devices_really_used(capsys):
    result = train_data_parallel(
        lenet(), _toy_batches(), _toy_batches(), 1, 0.1, ["cpu", "cpu"], plot=False
    )
    assert result.devices == ["cpu"]
    assert result.note == "nn.DataParallel needs GPUs: 1 CPU replica instead of 2 devices"
    assert "on [cpu] (nn.DataParallel needs GPUs" in capsys.readouterr().out
    single = train_data_parallel(
        lenet(), _toy_batches(), _toy_batches(), 1, 0.1, ["cpu"], plot=False, verbose=False
    )
    assert single.note == "" and _numbers(single) == _numbers(result)


@pytest.mark.gpus(1)
def test_train_data_parallel_leaves_cpus_out():
    result = train_data_parallel(
        lenet(), _toy_batches(), _toy_batches(), 1, 0.1, ["cuda:0", "cpu"], plot=False
    )
    assert result.devices == ["cuda:0"]
    assert result.note == "nn.DataParallel uses GPUs only: 1 of the 2 devices"


@pytest.mark.gpus(2)
def test_train_data_parallel_on_two_gpus():
    result = train_data_parallel(
        lenet(), _toy_batches(), _toy_batches(), 1, 0.1, ["cuda:0", "cuda:1"], plot=False
    )
    assert result.devices == ["cuda:0", "cuda:1"] and result.note == ""


@pytest.mark.parametrize(
    ("devices", "error", "match"),
    [
        ([], ValueError, "must not be empty"),
        ("cpu", TypeError, "must be a list of devices"),
        (["meta"], ValueError, "a CPU or a CUDA device"),
        (["cuda:99"], ValueError, r"CUDA is not available|GPU\(s\)"),
    ],
)
def test_train_data_parallel_bad_devices(devices, error, match):
    with pytest.raises(error, match=match):
        train_data_parallel(lenet(), _toy_batches(), _toy_batches(), 1, 0.1, devices)


@pytest.mark.gpus(1)
def test_train_data_parallel_refuses_a_repeated_gpu():
    with pytest.raises(ValueError, match="must not repeat a GPU"):
        train_data_parallel(lenet(), _toy_batches(), _toy_batches(), 1, 0.1, ["cuda", "cuda:0"])


# ---------------------------------------------------------------- real Fashion-MNIST


# LeNet leaves its plateau at a step that depends on the CPU's kernels (AVX-512, AVX2, SSE:
# 0.22 to 0.42 test accuracy after 38 steps on one machine). After ~190 steps every setting
# tried ends at 0.6-0.67 (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, MKL_ENABLE_INSTRUCTIONS
# lowered or not): the test asks for less, and for a falling loss.
SMOKE = "from gpukit import *; t, v = load_data_fashion_mnist(16, n_train=1000, n_test=500)\n"
SMOKE_RUN = "r = train_ch6(lenet(), t, v, 3, 0.3, 'cpu', plot=False, verbose=False)\n"
LOWERED_KERNELS = {
    "ATEN_CPU_CAPABILITY": "default",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
}


def _learned(result: TrainResult) -> bool:
    first = result.history[0]
    last = result.history[-1]
    return result.test_acc > 0.4 and last.train_loss < 0.8 * first.train_loss  # chance: 0.1


@needs_data
def test_smoke_real_fashion_mnist_training_learns_and_repeats():
    scope: dict = {}
    exec(SMOKE + SMOKE_RUN, scope)
    result = scope["r"]
    assert (result.n_train, result.n_test) == (1000, 500)
    assert _learned(result), result.history
    exec(SMOKE + SMOKE_RUN, scope)  # fresh loaders: the same shuffles
    assert _numbers(scope["r"]) == _numbers(result)


@needs_data
def test_smoke_training_learns_with_the_oldest_cpu_kernels():
    # The variables are read when torch loads: a fresh interpreter with the kernels of a CPU
    # without AVX (as far as PyTorch, oneDNN and MKL are concerned).
    code = (
        SMOKE
        + SMOKE_RUN
        + (
            "import torch; print(torch.backends.cpu.get_cpu_capability(), r.test_acc,"
            " r.history[0].train_loss, r.history[-1].train_loss)"
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **LOWERED_KERNELS},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    capability, acc, first_loss, last_loss = done.stdout.split()
    assert capability == "DEFAULT"
    assert float(acc) > 0.4 and float(last_loss) < 0.8 * float(first_loss), done.stdout


@needs_data
def test_quick_profile_lenet_gets_past_the_plateau():
    # The from-scratch page's settings on a CPU: D2L's std-0.01 initialisation must leave
    # chance level within the quick profile's few seconds.
    work = PROFILES["quick"].lenet
    train_iter, test_iter = load_data_fashion_mnist(
        work.batch_size, n_train=work.n_train, n_test=work.n_test
    )
    result = train_data_parallel(
        lenet(), train_iter, test_iter, work.epochs, work.lr, ["cpu"], init="normal", plot=False
    )
    assert result.test_acc > 0.3


def test_quick_profile_resnet_gives_the_two_device_runs_enough_steps():
    # Issue 13: the concise page's two-device runs (twice the batch) evaluated at chance after
    # 32 optimizer steps, and ended at 0.2-0.55 after 64-72 steps on this project's CPU: the
    # std-0.01 weights leave their plateau and batch norm's running averages catch up with
    # them only after enough steps. With 96 steps and a schedule that ends with small steps
    # every row reached 0.61-0.67 under each CPU kernel setting tried (src/gpukit/profiles.py;
    # 128 steps: 0.6-0.75, but the page took over its time budget); tests/browser/
    # test_claims.py checks the page's own table (>= 0.5).
    work = PROFILES["quick"].resnet
    assert work.epochs * -(-work.n_train // (2 * work.batch_size)) >= 96
    assert work.schedule == "warmup-cosine"


# ---------------------------------------------------------------- DDP in 2 gloo processes


def test_train_ddp_two_gloo_processes(fake_fashion_mnist, capsys):
    root = fake_fashion_mnist(n_train=48, n_test=20)
    net = lenet()
    before = net[0].weight.detach().clone()
    result = train_ddp(2, 2, 0.1, 16, net=net, root=root, backend="gloo", init="xavier", plot=True)
    printed = capsys.readouterr().out
    assert "on [cpu, cpu] (DistributedDataParallel, 2 gloo processes)" in printed
    assert "48 training / 20 test images, batch 16, lr 0.1, 2 epochs" in printed
    assert result.devices == ["cpu", "cpu"] and len(result.history) == 2
    assert all(0 <= s.test_acc <= 1 and s.seconds > 0 for s in result.history)
    # The trained weights come back into the caller's net.
    assert not torch.equal(net[0].weight, before)
    assert net[0].weight.device.type == "cpu"
    assert [s.lr for s in result.history] == [0.1, 0.1]  # constant, D2L's


def test_train_ddp_resizes_the_images_in_every_process(fake_fashion_mnist, capsys):
    # A linear layer of 14 x 14 inputs fails on Fashion-MNIST's 28 x 28 images: both ranks
    # (training) and rank 0 (testing) must resize, as the quick profile's ResNet-18 runs do.
    root = fake_fashion_mnist(n_train=32, n_test=16)
    net = nn.Sequential(nn.Flatten(), nn.Linear(14 * 14, 10))
    result = train_ddp(2, 1, 0.1, 8, net=net, root=root, backend="gloo", resize=14, plot=False)
    assert len(result.history) == 1 and 0 <= result.test_acc <= 1
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        train_ddp(2, 1, 0.1, 8, net=net, root=root, backend="gloo", plot=False, verbose=False)


def test_workload_describes_its_image_size():
    work = Workload(512, 256, epochs=2, batch_size=4, lr=0.0125, name="ResNet-18", resize=14)
    assert work.describe() == (
        "ResNet-18: 512 training / 256 test images of 14x14 pixels, batch 4, lr 0.0125, 2 epochs"
    )


def test_checking_a_loader_leaves_its_shuffle_alone(fake_fashion_mnist):
    # A DataLoader's iter() draws a seed from its generator: a check of train_iter that called
    # it would change the batches of the very run it checks. The run reads one epoch, so the
    # loader's next epoch is the second of a loader made alike.
    root = fake_fashion_mnist(n_train=48, n_test=20)
    checked, test_iter = load_data_fashion_mnist(8, root=root)
    fresh, _ = load_data_fashion_mnist(8, root=root)
    train_ch6(lenet(), checked, test_iter, 1, 0.1, "cpu", plot=False, verbose=False)
    first = [y.tolist() for _, y in fresh]
    second = [y.tolist() for _, y in fresh]
    assert first != second
    assert [y.tolist() for _, y in checked] == second


def test_train_ddp_passes_its_run_timeout_to_the_launcher(fake_fashion_mnist, monkeypatch):
    # A hung rank then ends the run with every rank's output, not after the 600 s collective
    # timeout.
    launched = {}

    def launch(worker, **options):
        launched.update(options)
        raise RuntimeError("not launched")

    monkeypatch.setattr(training, "launch_checked", launch)
    root = fake_fashion_mnist(n_train=16, n_test=8)
    with pytest.raises(RuntimeError, match="not launched"):
        train_ddp(2, 1, 0.1, 16, net=lenet(), root=root, backend="gloo", run_timeout_s=30)
    assert launched["run_timeout_s"] == 30


def test_train_ddp_names_a_single_process_as_one(fake_fashion_mnist):
    root = fake_fashion_mnist(n_train=16, n_test=8)
    result = train_ddp(1, 1, 0.1, 16, net=lenet(), root=root, backend="gloo", plot=False)
    assert result.devices == ["cpu"] and result.note == "DistributedDataParallel, 1 gloo process"


def test_train_ddp_follows_the_schedule_in_every_process(fake_fashion_mnist):
    root = fake_fashion_mnist(n_train=48, n_test=20)  # 3 steps per epoch with batch 16
    result = train_ddp(
        2,
        2,
        0.1,
        16,
        net=lenet(),
        root=root,
        backend="gloo",
        schedule="warmup-cosine",
        plot=False,
        verbose=False,
    )
    assert [s.lr for s in result.history] == pytest.approx(
        [0.1 * lr_factor("warmup-cosine", step, 3, 2) for step in (2, 5)]
    )
    assert "(warm-up + cosine decay)" in result.summary()


@pytest.mark.gpus(1)
def test_train_ch6_on_a_gpu_gives_the_weights_back_on_it():
    batches = _toy_batches()
    net = lenet()
    result = train_ch6(net, batches, batches[:2], 1, 0.1, "cuda:0", plot=False, verbose=False)
    assert result.devices == ["cuda:0"] and result.sec_per_epoch > 0
    assert next(net.parameters()).device == torch.device("cuda", 0)


# ---------------------------------------------------------------- DDP on GPUs (NCCL)


@pytest.mark.gpus(1)
def test_train_ddp_one_nccl_process_on_one_gpu(fake_fashion_mnist):
    # The concise page's DDP run on a machine with exactly one GPU.
    root = fake_fashion_mnist(n_train=48, n_test=20)
    net = lenet()
    result = train_ddp(1, 1, 0.1, 16, net=net, root=root, plot=False, verbose=False)
    assert result.devices == ["cuda:0"]
    assert result.note == "DistributedDataParallel, 1 nccl process"
    assert net[0].weight.device.type == "cpu"  # the caller's net stays where it was


@pytest.mark.gpus(2)
def test_train_ddp_two_nccl_processes_follow_the_schedule(fake_fashion_mnist, capsys):
    root = fake_fashion_mnist(n_train=48, n_test=20)
    net = lenet()
    before = net[0].weight.detach().clone()
    result = train_ddp(2, 2, 0.1, 16, net=net, root=root, schedule="warmup-cosine", plot=False)
    assert "on [cuda:0, cuda:1] (DistributedDataParallel, 2 nccl processes)" in (
        capsys.readouterr().out
    )
    assert [s.lr for s in result.history] == pytest.approx(
        [0.1 * lr_factor("warmup-cosine", step, 3, 2) for step in (2, 5)]
    )
    assert all(0 <= s.test_acc <= 1 and s.seconds > 0 for s in result.history)
    assert not torch.equal(net[0].weight, before)


class _MainModule(nn.Module):
    def forward(self, X):
        return X


_MainModule.__module__ = "__main__"  # as if defined in a notebook


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((2, 1, 0.1, 15), {}, ValueError, "multiple of world_size"),
        ((0, 1, 0.1, 16), {}, ValueError, "world_size must be >= 1"),
        ((2, 1, 0.1, 16), {"n_train": 1}, ValueError, "n_train must be >= world_size"),
        ((2, 1, 0.1, 16), {"root": 3}, TypeError, "root must be"),
        ((2, 1, 0.1, 16), {"net": nn.Sequential(_MainModule())}, TypeError, "__main__"),
        ((2, 0, 0.1, 16), {}, ValueError, "num_epochs"),
    ],
)
def test_train_ddp_bad_arguments(args, kwargs, error, match):
    kwargs.setdefault("net", lenet())
    with pytest.raises(error, match=match):
        train_ddp(*args, **kwargs)
