"""The `align` job: the same network and inputs on two paths (device, mode, precision), tensors compared."""
