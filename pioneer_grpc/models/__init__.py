"""What the server knows of each model: window, output limit, tokenizer, cache minimum, provider."""
