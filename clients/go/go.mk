# Go client targets. Included by the top-level Makefile (`include clients/go/go.mk`);
# also usable alone: `make -f clients/go/go.mk go-test` from the repository root.
#
# Every variable here starts with GO_ and every target with go-, so the fragment
# cannot collide with the including Makefile.
#
#   go-tools        install the pinned protoc-gen-go and protoc-gen-go-grpc into $(GO_TOOLS_BIN)
#   go-proto        regenerate clients/go/gen from protos/ (the stubs are committed)
#   go-proto-check  regenerate into a temp dir and fail when it differs from the committed stubs
#   go-vet          go vet ./... in clients/go
#   go-test         go test -v ./... in clients/go (contract tests need a server, see below);
#                   GO_TEST_FLAGS replaces -v, e.g. GO_TEST_FLAGS='-v -run Watch'
#   go-build        go build ./... in clients/go
#   go-load         build the load generator into clients/go/bin/pioneer-load
#   go-agentloop    build the example agent loop into clients/go/bin/agentloop
#
# Contract tests read PIONEER_ADDR (host:port), PIONEER_TOKEN (bearer token the server
# was started with) and PIONEER_HOME (the server's runtime home). Without PIONEER_ADDR
# they start their own server from $(GO_ROOT)/.venv/bin/pioneer-grpc on a free
# loopback port. With CI=true an UNIMPLEMENTED RPC fails instead of skipping.

GO_MK_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
GO_DIR := $(abspath $(GO_MK_DIR))
GO_ROOT := $(abspath $(GO_DIR)/../..)

GO_CMD ?= $(or $(shell command -v go 2>/dev/null),/usr/local/go/bin/go)
GO_TOOLS_BIN ?= $(or $(TOOLS_BIN),$(GO_ROOT)/.tools/bin)
GO_PYTHON ?= $(GO_ROOT)/.venv/bin/python
GO_TEST_FLAGS ?= -v

# Pinned generator versions. Bumping one changes the committed stubs: run go-proto.
GO_PROTOC_GEN_GO_VERSION ?= v1.36.12
GO_PROTOC_GEN_GO_GRPC_VERSION ?= v1.6.2

GO_MODULE := github.com/pioneer-grpc/pioneer-grpc/clients/go
GO_PROTO_DIR := $(GO_ROOT)/protos
GO_PROTO_FILES = $(sort $(wildcard $(GO_PROTO_DIR)/pioneer/v1/*.proto))
GO_GEN_DIR := $(GO_DIR)/gen
GO_PROTOC_GEN_GO := $(GO_TOOLS_BIN)/protoc-gen-go
GO_PROTOC_GEN_GO_GRPC := $(GO_TOOLS_BIN)/protoc-gen-go-grpc
GO_BIN_DIR := $(GO_DIR)/bin

# $(call GO_PROTOC_RUN,out-dir): generate Go stubs under out-dir/gen/pioneer/v1.
define GO_PROTOC_RUN
$(GO_PYTHON) -m grpc_tools.protoc \
	--proto_path=$(GO_PROTO_DIR) \
	--proto_path=$$($(GO_PYTHON) -c 'import grpc_tools,os;print(os.path.join(os.path.dirname(grpc_tools.__file__),"_proto"))') \
	--plugin=protoc-gen-go=$(GO_PROTOC_GEN_GO) \
	--plugin=protoc-gen-go-grpc=$(GO_PROTOC_GEN_GO_GRPC) \
	--go_out=$(1) --go_opt=module=$(GO_MODULE) \
	--go-grpc_out=$(1) --go-grpc_opt=module=$(GO_MODULE) \
	$(GO_PROTO_FILES)
endef

.PHONY: go-tools go-proto go-proto-check go-vet go-test go-load go-agentloop go-build

# Installs only when the binary is missing or reports another version, so a
# changed pin reinstalls and a fresh machine fetches both from the module proxy.
go-tools:
	@mkdir -p $(GO_TOOLS_BIN)
	@if [ "$$($(GO_PROTOC_GEN_GO) --version 2>/dev/null)" != "protoc-gen-go $(GO_PROTOC_GEN_GO_VERSION)" ]; then \
		echo "installing protoc-gen-go $(GO_PROTOC_GEN_GO_VERSION) into $(GO_TOOLS_BIN)"; \
		GOBIN=$(GO_TOOLS_BIN) $(GO_CMD) install google.golang.org/protobuf/cmd/protoc-gen-go@$(GO_PROTOC_GEN_GO_VERSION); \
	fi
	@if [ "$$($(GO_PROTOC_GEN_GO_GRPC) --version 2>/dev/null)" != "protoc-gen-go-grpc $(patsubst v%,%,$(GO_PROTOC_GEN_GO_GRPC_VERSION))" ]; then \
		echo "installing protoc-gen-go-grpc $(GO_PROTOC_GEN_GO_GRPC_VERSION) into $(GO_TOOLS_BIN)"; \
		GOBIN=$(GO_TOOLS_BIN) $(GO_CMD) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(GO_PROTOC_GEN_GO_GRPC_VERSION); \
	fi

go-proto: go-tools
	@test -x $(GO_PYTHON) || { echo "go-proto: $(GO_PYTHON) missing (grpcio-tools provides protoc)"; exit 1; }
	rm -rf $(GO_GEN_DIR)/pioneer
	$(call GO_PROTOC_RUN,$(GO_DIR))

go-proto-check: go-tools
	@test -x $(GO_PYTHON) || { echo "go-proto-check: $(GO_PYTHON) missing (grpcio-tools provides protoc)"; exit 1; }
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	$(call GO_PROTOC_RUN,$$tmp); \
	if diff -r "$$tmp/gen" $(GO_GEN_DIR); then \
		echo "go-proto-check: committed Go stubs match protos/"; \
	else \
		echo "go-proto-check: clients/go/gen is stale; run 'make go-proto' and commit"; exit 1; \
	fi

go-vet:
	cd $(GO_DIR) && $(GO_CMD) vet ./...

go-test:
	cd $(GO_DIR) && $(GO_CMD) test -count=1 $(GO_TEST_FLAGS) ./...

go-build:
	cd $(GO_DIR) && $(GO_CMD) build ./...

go-load:
	@mkdir -p $(GO_BIN_DIR)
	cd $(GO_DIR) && $(GO_CMD) build -o $(GO_BIN_DIR)/pioneer-load ./cmd/pioneer-load

go-agentloop:
	@mkdir -p $(GO_BIN_DIR)
	cd $(GO_DIR) && $(GO_CMD) build -o $(GO_BIN_DIR)/agentloop ./cmd/agentloop
