"""Every operation as a function with typed inputs and frozen view outputs."""
