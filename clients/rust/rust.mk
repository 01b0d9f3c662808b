# Rust client targets. The top-level Makefile includes this file; every
# variable here starts with RUST_ and every target with rust-.
#
#   rust-proto        regenerate the committed stubs in clients/rust/src/gen
#   rust-proto-check  fail when the committed stubs differ from what the protos generate
#   rust-clippy       clippy (warnings are errors) and rustfmt --check
#   rust-test         unit tests, doc tests, the example's build and the contract tests
#   rust-example      run examples/agentloop.rs against a server
#
# rust-test and rust-example talk to the server named by the environment:
#   PIONEER_ADDR   host:port (unset: the contract tests start their own server from .venv)
#   PIONEER_TOKEN  its bearer token (empty = none)
#   PIONEER_HOME   its runtime home (bootstrap file checks)
#   CI=true        an UNIMPLEMENTED answer (or no server) fails instead of skipping

RUST_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
RUST_CARGO ?= cargo
RUST_TARGET_DIR ?= $(RUST_DIR)/target
RUST_CARGO_FLAGS ?= --locked
RUST_TEST_FLAGS ?=
# e.g. --all-features to lint the `tls` code too (builds ring: about a minute more)
RUST_CLIPPY_FLAGS ?=
RUST_ENV = CARGO_TARGET_DIR=$(RUST_TARGET_DIR)
RUST_CODEGEN = $(RUST_ENV) $(RUST_CARGO) run $(RUST_CARGO_FLAGS) --quiet --manifest-path $(RUST_DIR)/Cargo.toml -p pioneer-grpc-codegen --

.PHONY: rust-proto rust-proto-check rust-clippy rust-fmt rust-test rust-example rust-clean

rust-proto:
	$(RUST_CODEGEN) $(RUST_DIR)/src/gen

rust-proto-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(RUST_CODEGEN) "$$tmp/gen" >/dev/null; \
	if ! diff -ru "$(RUST_DIR)/src/gen" "$$tmp/gen"; then \
		echo "clients/rust/src/gen is stale: run 'make rust-proto' and commit the result" >&2; exit 1; \
	fi; \
	echo "clients/rust/src/gen matches protos/pioneer/v1"

rust-clippy:
	cd $(RUST_DIR) && $(RUST_ENV) $(RUST_CARGO) fmt --all --check
	cd $(RUST_DIR) && $(RUST_ENV) $(RUST_CARGO) clippy $(RUST_CARGO_FLAGS) $(RUST_CLIPPY_FLAGS) --workspace --all-targets -- -D warnings

rust-fmt:
	cd $(RUST_DIR) && $(RUST_CARGO) fmt --all

rust-test:
	cd $(RUST_DIR) && $(RUST_ENV) $(RUST_CARGO) test $(RUST_CARGO_FLAGS) $(RUST_TEST_FLAGS)

rust-example:
	cd $(RUST_DIR) && $(RUST_ENV) $(RUST_CARGO) run $(RUST_CARGO_FLAGS) --quiet --example agentloop

rust-clean:
	rm -rf $(RUST_TARGET_DIR)
