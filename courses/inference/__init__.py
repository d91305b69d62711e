"""Shared inference math: GPU and model catalogues (`specs`), the speed-of-light arithmetic
(`math`), whole answers with their working (`report`), number formatting (`units`) and toy
batch schedulers (`scheduling`). No Django imports: lessons, questions, labs and the
`speedoflight` command all use the same functions."""
