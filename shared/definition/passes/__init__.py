"""The compiler's passes, one module each, run in the order ``shared.definition.compiler`` lists."""
