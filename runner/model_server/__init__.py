"""``waza serve-model``: an OpenAI-, Anthropic- and Gemini-compatible model server on loopback for agents under test."""
