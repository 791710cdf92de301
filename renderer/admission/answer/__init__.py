"""The answer: what `fit` concludes for each workload (`result`) and its forms (`text`)."""
