"""Stage 1: documents, questions and the dataset adapters that produce them."""
