"""Thin DVC stage entry points: parse arguments, load a config section, call one function."""
