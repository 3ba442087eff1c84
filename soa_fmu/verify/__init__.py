"""What the tests check the engine with, kept outside the engine: dense spatial operators
(:mod:`.operators`), model builders (:mod:`.builders`: serial chains, random trees, random states)
and the export to Pinocchio (:mod:`.pinocchio_bridge`)."""
