"""The facts that gpukit, the site's build, its tests and the GPU check share, named once.

Standard library only, and nothing from the rest of gpukit: the tools that run without torch
(``gpukit_site.kernel_env``, for nox, the tests' conftest and the GPU check) load this file by its
path, so that no name here is spelled twice.
"""

#: The execution profile, ``quick`` or ``full`` (:func:`gpukit.current_profile`).
PROFILE_VAR = "GPUKIT_PROFILE"
#: A folder holding Fashion-MNIST's four files (:func:`gpukit.find_fashion_mnist`).
DATA_VAR = "GPUKIT_DATA"
#: Set to 1 where fewer GPUs than wanted is a failure, not a skip: the GPU runner's tests and
#: ``nox -s docs -- --require-gpus`` (the GPU guard).
REQUIRE_GPUS_VAR = "GPUKIT_REQUIRE_GPUS"
#: The GPUs of a test marked ``@pytest.mark.gpus`` without a number.
DEFAULT_TEST_GPUS = 1

#: Fashion-MNIST's files, split -> (images, labels), and how many examples each split holds.
FASHION_MNIST_FILES = {
    "train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
    "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
}
FASHION_MNIST_SIZES = {"train": 60_000, "test": 10_000}
