"""What the tests check the engine with, kept outside the engine: dense spatial operators
(:mod:`.operators`), model builders (:mod:`.builders`: serial chains, random trees, random states),
the export to Pinocchio (:mod:`.pinocchio_bridge`) and the dense general form of constrained
forward dynamics (:mod:`.general_form`, seed 003 (4.9))."""
