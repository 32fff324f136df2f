"""The study's grid, the spine under the stages: the config resolved once into typed chunk sets and cells
(harness.grid.cells), every path under results/ (harness.grid.paths), and the one definition of each
state: built, scored, answered, current or stale (harness.grid.states)."""
