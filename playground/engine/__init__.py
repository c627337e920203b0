"""The speculative decoding engine. It knows token ids and tensors; no UI, no HTML, no files."""
