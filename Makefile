# The two commands of README: `make demo` and `make test`. Both set up first.
.PHONY: setup demo test clean

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/python -m braidlab demo

test:
	bash scripts/test.sh

clean:
	.venv/bin/python -m braidlab clean
