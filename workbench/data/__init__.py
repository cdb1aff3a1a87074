"""Fashion-MNIST data: verified loading, locating, splitting, synthetic stand-in, fetch (import each module directly)."""
