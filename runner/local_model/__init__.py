"""A local model server (llama.cpp) for --judge local and --local-model."""
