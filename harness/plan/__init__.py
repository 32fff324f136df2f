"""The registered analysis: plan/plan.yaml and amendments as data (model), how they are read and checked
(load, analyses), and the decision rules a plan may name (rules). Imports only config and below."""
