"""jeirt-lite: tells which LLM will answer a question correctly, before you ask any of them."""
