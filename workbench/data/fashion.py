"""Fashion-MNIST's fixed facts (class names, image size), importable without numpy."""

# Official label order of Fashion-MNIST (index = label value).
CLASS_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
NUM_CLASSES = len(CLASS_NAMES)
IMAGE_HW = (28, 28)
