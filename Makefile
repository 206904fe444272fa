# flink-operator Makefile: the operator-sdk / kubebuilder go/v4 targets, with every tool
# built from package registries into bin/ (no release download site is reachable in CI).

IMG ?= ghcr.io/flink-operator/flink-operator:$(VERSION)
VERSION ?= 0.2.0

## OLM packaging: this release replaces PREVIOUS_VERSION and skips to the newest from anything older.
BUNDLE_PACKAGE ?= flink-operator
PREVIOUS_VERSION ?= 0.1.0
CHANNELS ?= stable,fast
DEFAULT_CHANNEL ?= stable
SKIP_RANGE ?= >=0.0.0 <$(VERSION)

SHELL = /usr/bin/env bash -o pipefail
.SHELLFLAGS = -ec

# One build configuration for everything make compiles, tools and tests alike: static and with
# trimmed paths, as the operator image must be built. Go's build cache then compiles each package
# once per machine, shared by the image, the control plane, the other tools and the test
# binaries (a cold CI run compiled the operator's dependency tree twice, once for the image).
#
# Without debug information (-dwarf=false, -w): nothing here runs under a debugger, the stack
# traces of panics and the profiles come from the symbol and line tables, which stay; and on
# an empty machine, where the builds of the control plane, OLM and the linters take most of
# make test-deps on 2 busy cores, the compiler and the linker then do about a tenth less work
# (etcd from an empty build cache: 124 CPU seconds with debug information, 112 without).
# Builds given -ldflags of their own (the Kubernetes binaries' version stamps) keep the linker's.
export CGO_ENABLED = 0
GOFLAGS := $(strip $(GOFLAGS) -trimpath -gcflags=all=-dwarf=false -ldflags=-w)
export GOFLAGS

GOOS   ?= $(shell go env GOOS)
GOARCH ?= $(shell go env GOARCH)

## Location of built tools.
LOCALBIN ?= $(shell pwd)/bin
$(LOCALBIN):
	mkdir -p $(LOCALBIN)

## Tool versions (kept matched: k8s 1.37 <-> client-go v0.37 <-> controller-runtime v0.25 <-> controller-tools v0.23).
CONTROLLER_TOOLS_VERSION ?= v0.23.0
KUSTOMIZE_VERSION ?= v5.7.1
ENVTEST_VERSION ?= v0.25.1
K8S_VERSION ?= 1.37.2
ENVTEST_K8S_VERSION ?= 1.37

GOLANGCI_LINT_VERSION ?= v2.15.0
# mikefarah's yq, which upstream's e2e scripts read statuses with (yq v4 syntax); the yq a
# distribution packages may be another program.
YQ_VERSION ?= v4.54.3
# crd-ref-docs writes docs/reference/api.md from the Go types of the CRDs (make docs).
CRD_REF_DOCS_VERSION ?= v0.3.0
# promtool checks and unit-tests config/prometheus (test/monitoring); not a dependency of the operator.
PROMTOOL_VERSION ?= v0.316.0

OPM_VERSION ?= v1.56.0
OLM_VERSION ?= v0.33.0

CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_TOOLS_VERSION)
# opm and OLM are built from a wrapper module in hack/tools/olm: `go install` of operator-framework
# modules fails here, so the wrapper module pins their versions and builds them.
OPM ?= $(LOCALBIN)/olm/opm-$(OPM_VERSION)
OLM ?= $(LOCALBIN)/olm/olm-$(OLM_VERSION)
OLM_CATALOG ?= $(LOCALBIN)/olm/catalog-$(OLM_VERSION)
KUSTOMIZE ?= $(LOCALBIN)/kustomize-$(KUSTOMIZE_VERSION)
ENVTEST ?= $(LOCALBIN)/setup-envtest-$(ENVTEST_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
PROMTOOL ?= $(LOCALBIN)/promtool-$(PROMTOOL_VERSION)
YQ ?= $(LOCALBIN)/yq-$(YQ_VERSION)
CRD_REF_DOCS ?= $(LOCALBIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)

## envtest's control plane, built from the Go module proxy into the directory layout
## setup-envtest recognises, so `setup-envtest use` finds it offline.
ENVTEST_ASSETS_DIR = $(LOCALBIN)/k8s/$(K8S_VERSION)-$(GOOS)-$(GOARCH)
KUBE_APISERVER = $(ENVTEST_ASSETS_DIR)/kube-apiserver
ETCD = $(ENVTEST_ASSETS_DIR)/etcd
KUBECTL = $(ENVTEST_ASSETS_DIR)/kubectl
## The oldest supported Kubernetes (the CSV's minKubeVersion): `make unit` runs the controllers'
## envtest suite against its kube-apiserver too. 1.28 is the oldest whose kube-apiserver builds
## from the module proxy (1.27's k8s.io/legacy-cloud-providers is refused there); etcd is the
## newest one's (the etcd v3 API is the same).
K8S_OLDEST_VERSION ?= 1.28.15
ENVTEST_OLDEST_ASSETS_DIR = $(LOCALBIN)/k8s/$(K8S_OLDEST_VERSION)-$(GOOS)-$(GOARCH)
KUBE_APISERVER_OLDEST = $(ENVTEST_OLDEST_ASSETS_DIR)/kube-apiserver
ETCD_OLDEST = $(ENVTEST_OLDEST_ASSETS_DIR)/etcd
KUBE_OLDEST_VERSION_LDFLAGS = -X k8s.io/component-base/version.gitVersion=v$(K8S_OLDEST_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_OLDEST_VERSION)))
# The local cluster (test/localcluster) adds the controller manager and scheduler, so Deployments
# become ReplicaSets and Pods, and EndpointSlices follow pod readiness, as in a real cluster.
KUBE_CONTROLLER_MANAGER = $(ENVTEST_ASSETS_DIR)/kube-controller-manager
KUBE_SCHEDULER = $(ENVTEST_ASSETS_DIR)/kube-scheduler
# Its storage: Rancher's local-path-provisioner binds PersistentVolumeClaims of the default
# StorageClass. Keep in step with LocalPathProvisionerVersion in test/localcluster/storage.go.
LOCAL_PATH_PROVISIONER_VERSION ?= v0.0.30
LOCAL_PATH_PROVISIONER = $(ENVTEST_ASSETS_DIR)/local-path-provisioner-$(LOCAL_PATH_PROVISIONER_VERSION)
# Without these, /version reports v0.0.0-master and kubectl and OLM's minKubeVersion check fail.
KUBE_VERSION_LDFLAGS = -X k8s.io/component-base/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION))) \
	-X k8s.io/client-go/pkg/version.gitVersion=v$(K8S_VERSION) \
	-X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION)))

## Real Flink for the tests: distributions from PyPI (apache-flink-libraries sdist), example jobs
## from Maven Central, unpacked into bin/flink/<version> by hack/install-flink.sh.
FLINK1_VERSION ?= 1.20.3
FLINK1_EXAMPLES_VERSION ?= 1.20.0
FLINK2_VERSION ?= 2.3.0
FLINK2_EXAMPLES_VERSION ?= 2.3.0
FLINK_VERSIONS ?= $(FLINK1_VERSION) $(FLINK2_VERSION)
# ZooKeeper server the ZooKeeper HA tests start (version in hack/zookeeper/pom.xml).
ZOOKEEPER_DIR ?= $(LOCALBIN)/zookeeper
## The migration test: the Apache operator from Maven Central (hack/install-apache-operator.sh)
## and the Flink release it runs. Keep in step with the constants in test/migration.
APACHE_OPERATOR_VERSION ?= 1.7.0
MIGRATION_FLINK_VERSION ?= 1.18.1
# E2E_TIMEOUT bounds `make e2e`; raise it for longer chaos runs (CHAOS_ROUNDS=20 E2E_TIMEOUT=90m make e2e).
E2E_TIMEOUT ?= 40m
# E2E_PARALLEL is how many e2e tests share the local cluster at once. Each test has namespaces of its own;
# the two that stop, pause or restart the operator (E2E_FAULT_TESTS) run alone, before the others, or in
# a process and local cluster of their own (make e2e-faults, a lane of make test).
E2E_PARALLEL ?= 4
# Keep in step with operatorFaultTests in test/e2e/rbac_test.go.
E2E_FAULT_TESTS = ^(TestChaos|TestWebhookOutage)$$
# E2E_LATE_FAULT_TESTS: the fault tests make test runs in the upstream lane, after the upstream
# scripts, on a local cluster of their own, instead of in the e2e lane, to balance the two: in a
# cold run the upstream lane ended 5.5 minutes before the e2e lane, and the chaos test's
# suspend-resume flow takes about 2.5 of the e2e lane's 21. Keep in step with lateFaultTests in
# test/e2e/rbac_test.go.
E2E_LATE_FAULT_TESTS = ^TestChaos/^suspend-resume

CRD_OPTIONS ?= crd:generateEmbeddedObjectMeta=true,allowDangerousTypes=true

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Display this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: controller-gen ## Generate CRDs and RBAC from kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role $(CRD_OPTIONS) webhook paths="./..." output:crd:artifacts:config=config/crd/bases
	go run ./hack/podtemplateschema config/crd/bases/flink.apache.org_flinkdeployments.yaml config/crd/bases/flink.apache.org_flinkbluegreendeployments.yaml

.PHONY: generate
generate: controller-gen ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object:headerFile="hack/boilerplate.go.txt" paths="./..."

.PHONY: fmt
fmt: ## go fmt.
	go fmt ./...

.PHONY: vet
vet: ## go vet.
	go vet ./...

# The generated reference pages (docs/reference): the API from the Go types of the CRDs, the
# configuration from the options registry, the metrics from the registered collectors.
DOCS_REFERENCE = docs/reference
API_REFERENCE_HEADER = <!-- Generated by `make docs` from the Go types in api/ (crd-ref-docs $(CRD_REF_DOCS_VERSION), hack/crd-ref-docs.yaml); do not edit. -->

.PHONY: docs
docs: crd-ref-docs ## Regenerate docs/reference: the API reference (crd-ref-docs over api/), the configuration reference (pkg/options) and the metrics reference (pkg/metrics).
	@mkdir -p $(DOCS_REFERENCE)
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	$(CRD_REF_DOCS) --source-path=./api --config=hack/crd-ref-docs.yaml --renderer=markdown --log-level=ERROR --output-path="$$d/api.md" && \
	{ printf '%s\n\n' '$(API_REFERENCE_HEADER)'; cat "$$d/api.md"; } > $(DOCS_REFERENCE)/api.md
	go run ./hack/docgen -out $(DOCS_REFERENCE)

.PHONY: doclinks
doclinks: ## Fail when a relative link or an anchor in README.md, docs/ or another Markdown file of the repository does not resolve (hack/doclinks).
	go run ./hack/doclinks .

.PHONY: verify
verify: manifests generate docs ## Fail when generated files (CRDs, RBAC, deep copies, bundle, catalog, docs/reference) are stale, a link in the docs is broken, or gofmt / go vet complain.
	@if [ -n "$$(gofmt -l $$(git ls-files '*.go'))" ]; then echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; fi
	go vet ./...
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory bundle catalog
	@if [ -n "$$(git status --porcelain -- api config bundle bundle.Dockerfile catalog $(DOCS_REFERENCE))" ]; then \
		echo "generated files are stale; run 'make manifests generate bundle catalog docs' and commit:"; \
		git status --porcelain -- api config bundle bundle.Dockerfile catalog $(DOCS_REFERENCE); git diff --stat -- api config bundle catalog $(DOCS_REFERENCE); exit 1; fi
	$(MAKE) --no-print-directory doclinks
	@echo "verify: ok"

.PHONY: lint
lint: golangci-lint ## golangci-lint with gosec and staticcheck (.golangci.yml), the options registry's rule (hack/optionkeys: no option key literal outside pkg/options) and the tests' waiting idiom (hack/waitidiom: test/wait only, no require in a polled condition); part of verify.
	$(GOLANGCI_LINT) run --timeout 10m ./...
	go run ./hack/optionkeys .
	go run ./hack/waitidiom .

.PHONY: test
test: ## Run all tests: unit, envtest (real kube-apiserver + etcd), real-Flink suites, the e2e suite, the make deploy test, the OLM install/upgrade test, the migration test from the Apache operator, the Apache operator's own e2e scripts. Everything they run is built first (test-deps), then four lanes run at once (TEST_LANES=1 runs them one after the other); each lane's output is printed when it ends.
	@mkdir -p $(LOCALBIN) && date +%s > $(LOCALBIN)/.test-deps
	$(MAKE) --no-print-directory test-deps
	@echo "test-deps: took $$(( $$(date +%s) - $$(cat $(LOCALBIN)/.test-deps) ))s"
	$(MAKE) --no-print-directory -j$(TEST_LANES) --output-sync=recurse GENERATE= test-lane-unit test-lane-e2e test-lane-clusters test-lane-upstream

# The lanes share nothing but the machine: envtest API servers on loopback ports of their own, and
# local clusters in network namespaces of their own. Everything they build is built first, once.
TEST_LANES ?= 4
# GENERATE is what every test target regenerates first; the lanes run after test-deps did it once,
# with GENERATE empty, so that no lane rewrites sources another lane is compiling.
GENERATE ?= manifests generate
# UNIT_PARALLEL: how many of the controllers' envtest scenarios run at once (go test -parallel)
# in the inner loop and on the oldest API server. They mostly wait for reconciles, not for the
# CPU: measured on 2 idle cores, 8 at a time take the suite from 280 s to 120 s. The unit lane
# keeps go test's default (one per core): it runs beside the e2e suite's timing-bound fault
# tests, on a machine whose cores are already all busy.
UNIT_PARALLEL ?= 8
# DEPS_JOBS: how many builds and downloads test-deps runs at once. The downloads and Maven builds
# (test-deps-jvm, one recursive make with its own job slots) are named first so they start at
# once: named second, they waited for a free slot behind the Go builds, which on an empty
# machine took 38 minutes, and the downloads only started then.
DEPS_JOBS ?= 4
# BUILD_GOGC: the garbage collector's target of the Go toolchain (compiler and linker) while
# test-deps builds: on an empty build cache the compiler spends a sixth of its CPU collecting
# garbage at Go's default (100). Measured on 2 idle cores from an empty cache: kube-apiserver
# 1.28 211.7 CPU s (109.8 s) at 100 and 172.7 (88.4 s) at 400; etcd, five builds alternating,
# 63.2-64.5 at 100 and 56.4-57.0 at 400. The compiler's peak memory goes from 1.0 to at most
# 1.5 GB a process at 400. Only test-deps, where nothing else runs: the lanes' go test would
# pass it on to the test binaries and to the API servers and operators they start.
BUILD_GOGC ?= 400

.PHONY: test-deps test-deps-go test-deps-jvm
test-deps: export GOGC = $(BUILD_GOGC)
test-deps: ## Build and install everything the tests run, once, before the lanes start: the downloads start at once, beside the generation of sources and then the Go builds.
	$(MAKE) --no-print-directory -j$(DEPS_JOBS) --output-sync=target test-deps-jvm test-deps-generated-go
# The downloads and the JVM's work need no generated source; the Go builds do. The generation,
# about 85 s on an empty machine mostly spent building controller-gen, leaves a core idle that the
# Flink downloads (network and unpacking) use.
.PHONY: test-deps-generated-go
test-deps-generated-go:
	$(if $(GENERATE),$(MAKE) --no-print-directory $(GENERATE))
	$(MAKE) --no-print-directory GENERATE= test-deps-go
test-deps-go: envtest-assets envtest-oldest-assets cluster-assets promtool olm-tools image golangci-lint crd-ref-docs yq test-compile ## The Go builds test-deps runs (the control planes, promtool, OLM, the operator image, the linter and the API reference generator verify runs).
test-deps-jvm: ## The downloads and Maven builds test-deps runs: the Flink distributions first, then their class-data archives beside the Maven builds, which run one at a time (Maven's local repository is not safe for concurrent writers).
	$(MAKE) --no-print-directory flink-dist
	$(MAKE) --no-print-directory -j2 --output-sync=target flink-cds test-deps-maven

# test-compile compiles every package the lanes test, with their test files, without linking:
# the four lanes start at once, and on an empty build cache each go test compiled the packages
# they share again (the Go build cache does not coordinate concurrent builds). Once with the lanes'
# build tags and once without, as the lanes build them. After the operator's image, whose build
# compiles most of what the tests import: side by side they would compile it twice too.
.PHONY: test-compile
test-compile: image
	go list -export -deps -test ./... > /dev/null
	go list -export -deps -test -tags e2e,olm,migration ./... > /dev/null

.PHONY: test-deps-maven
test-deps-maven:
	$(MAKE) --no-print-directory -j1 migration-deps loadgen zookeeper examples upstream-e2e-jars flink-opt

.PHONY: test-lane-unit test-lane-e2e test-lane-clusters test-lane-upstream
# The e2e suite runs in one process: the operator-fault tests first, alone, then the others four
# at a time; one chaos flow (E2E_LATE_FAULT_TESTS) runs in the upstream lane once its scripts are done. Measured on 2 cores, other arrangements were slower or failed: the fault tests in a
# process of their own beside the upstream scripts' clusters stretched the chaos test from 9 to
# 21 minutes and past its two-minute settle bound (a JobManager still DEPLOYING), and after the
# unit tests they made the unit lane the longest (34 minutes in all against 29).
# Each lane prints when it started and how long it took, so a run shows which lane bounds it.
LANE_START = @echo "lane $(1): started at $$(date -u +%T)"; date +%s > $(LOCALBIN)/.lane-$(1)
LANE_END = @echo "lane $(1): took $$(( $$(date +%s) - $$(cat $(LOCALBIN)/.lane-$(1)) ))s, ended at $$(date -u +%T)"
test-lane-unit: ## Lane 1: unit, envtest and real-Flink tests of every package.
	$(call LANE_START,unit)
	$(MAKE) --no-print-directory unit-latest
	$(call LANE_END,unit)
test-lane-e2e: ## Lane 2: the e2e suite on the local cluster, then bench-flink's smoke test on one of its own.
	$(call LANE_START,e2e)
	$(MAKE) --no-print-directory e2e E2E_SKIP='$(E2E_LATE_FAULT_TESTS)'
	$(MAKE) --no-print-directory bench-flink-smoke
	$(call LANE_END,e2e)
test-lane-upstream: ## Lane 4: the Apache operator's own e2e scripts (test/upstream-e2e) on local clusters of their own, then the fault tests of E2E_LATE_FAULT_TESTS on another.
	$(call LANE_START,upstream)
	$(MAKE) --no-print-directory upstream-e2e
	$(MAKE) --no-print-directory e2e-faults E2E_FAULT_TESTS='$(E2E_LATE_FAULT_TESTS)'
	$(call LANE_END,upstream)
test-lane-clusters: ## Lane 3: the controllers' suite on the oldest API server, then the install, OLM and migration tests, each on a local cluster of its own.
	$(call LANE_START,clusters)
	$(MAKE) --no-print-directory unit-oldest deploy-test olm-test migration-test
	$(call LANE_END,clusters)

.PHONY: test-short
test-short: $(GENERATE) envtest-assets ## The inner loop: every package's unit and envtest tests with -short, which leaves out real Flink, ZooKeeper, the load generator, the scale bench and the local-cluster suites (all run by make test).
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" \
		go test ./... -short -count=1 -parallel $(UNIT_PARALLEL) -timeout 15m

.PHONY: unit
unit: unit-latest unit-oldest ## Unit, envtest and real-Flink tests (everything but e2e); the controllers' envtest suite also against the oldest supported API server.

.PHONY: unit-latest
unit-latest: $(GENERATE) envtest-assets flink-dist flink-cds loadgen promtool zookeeper ## Every package's tests against the current API server.
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" \
	FLINK_VERSIONS="$(FLINK_VERSIONS)" PROMTOOL=$(PROMTOOL) \
		go test ./... -count=1 -timeout 30m

.PHONY: unit-oldest
unit-oldest: $(GENERATE) envtest-oldest-assets ## The controllers' envtest suite against the oldest supported API server.
	@echo "unit: the controllers' envtest suite against the oldest supported API server, v$(K8S_OLDEST_VERSION)"
	KUBEBUILDER_ASSETS="$(ENVTEST_OLDEST_ASSETS_DIR)" go test ./controllers -count=1 -parallel $(UNIT_PARALLEL) -timeout 20m

.PHONY: e2e e2e-main e2e-faults
e2e: $(GENERATE) cluster-assets flink-dist flink-cds loadgen zookeeper examples flink-opt ## End-to-end scenarios on the local cluster with real Flink (test/e2e), in one process; E2E_SKIP: tests to leave out (go test -skip).
	FLINK_VERSIONS="$(FLINK_VERSIONS)" go test -tags e2e ./test/e2e -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) $(if $(E2E_SKIP),-skip '$(E2E_SKIP)') -v
e2e-main: $(GENERATE) cluster-assets flink-dist flink-cds loadgen zookeeper examples flink-opt ## The e2e suite but the operator-fault tests (E2E_FAULT_TESTS); the RBAC check stays complete.
	FLINK_VERSIONS="$(FLINK_VERSIONS)" go test -tags e2e ./test/e2e -count=1 -timeout $(E2E_TIMEOUT) -parallel $(E2E_PARALLEL) -skip '$(E2E_FAULT_TESTS)' -v
e2e-faults: $(GENERATE) cluster-assets flink-dist ## The e2e tests that kill, pause or restart the operator (chaos, webhook outage), on a local cluster of their own.
	FLINK_VERSIONS="$(FLINK_VERSIONS)" go test -tags e2e ./test/e2e -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_FAULT_TESTS)' -v

# The scripts make test runs: those that pass here so far (test/upstream-e2e/README.md has
# each script's result), the longest first, the order the runners take them in, except that
# test_snapshot.sh is not first (its README entry says why); empty runs every script.
UPSTREAM_E2E_SCRIPTS ?= test_application_kubernetes_ha.sh test_sessionjob_kubernetes_ha.sh test_snapshot.sh test_autoscaler.sh test_batch_job.sh test_bluegreen_ingress_rotation.sh test_bluegreen_laststate.sh test_sessionjob_operations.sh test_multi_sessionjob.sh test_application_operations.sh test_flink_operator_ha.sh test_bluegreen_stateless.sh test_dynamic_config.sh test_dynamic_flink_conf.sh
# UPSTREAM_E2E_RUNNERS: how many local clusters run the scripts at once, each taking the next
# script no other has taken (test/upstream-e2e/runners.sh).
UPSTREAM_E2E_RUNNERS ?= 2
.PHONY: upstream-e2e
upstream-e2e: $(GENERATE) cluster-assets flink-dist yq upstream-e2e-jars ## The Apache operator's own e2e scripts, unchanged, against this operator installed as make deploy installs it, on UPSTREAM_E2E_RUNNERS local clusters (test/upstream-e2e, its README lists what stands in for minikube and Helm).
	go test -c -tags e2e -o $(LOCALBIN)/upstream-e2e.test ./test/upstream-e2e
	cd test/upstream-e2e && FLINK_VERSIONS="$(FLINK1_VERSION)" UPSTREAM_E2E_SCRIPTS="$(UPSTREAM_E2E_SCRIPTS)" \
		bash runners.sh $(UPSTREAM_E2E_RUNNERS) $(LOCALBIN)/upstream-e2e.test -test.count=1 -test.timeout=60m -test.v

.PHONY: deploy-test
deploy-test: $(GENERATE) cluster-assets flink-dist ## Install config/default (what `make deploy` applies) on the local cluster and run a sample to RUNNING; install config/profiles/multi-tenant and see hostile FlinkDeployments refused (test/deploy); make run-local's operator refuses a bad spec through its webhooks (test/cmd/runlocal).
	FLINK_VERSIONS="$(FLINK1_VERSION)" go test -tags e2e ./test/deploy ./test/cmd/runlocal -run 'TestMakeDeploy|TestMultiTenantProfileOnCluster|TestRunLocalRefusesABadSpecNamingTheField' -count=1 -timeout 20m -v

.PHONY: olm-test
olm-test: $(GENERATE) cluster-assets olm-tools image ## Install and upgrade the operator through OLM from the file-based catalog on the local cluster (test/olm), the operator from its image.
	OPM=$(OPM) OLM=$(OLM) OLM_CATALOG=$(OLM_CATALOG) OPERATOR_IMAGE_LAYOUT=$(IMAGES_DIR)/flink-operator \
	OLM_CRDS="$$(cd hack/tools/olm && go list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)/deploy/chart/crds" \
		go test -tags olm ./test/olm -count=1 -timeout 15m -v

.PHONY: migration-test
migration-test: $(GENERATE) cluster-assets migration-deps ## The Apache operator 1.7.0 deploys jobs on real Flink 1.18; this operator adopts them without a restart and upgrades them (test/migration).
	go test -tags migration ./test/migration -count=1 -timeout 15m -v

.PHONY: migration-deps
migration-deps: $(LOCALBIN)/flink/$(MIGRATION_FLINK_VERSION)/.installed $(LOCALBIN)/apache-flink-operator/$(APACHE_OPERATOR_VERSION)/.installed ## Install what the migration test runs: the Apache operator and Flink 1.18.

$(LOCALBIN)/flink/$(MIGRATION_FLINK_VERSION)/.installed: hack/install-flink.sh
	hack/cached.sh $(@D) hack/install-flink.sh -- hack/install-flink.sh $(MIGRATION_FLINK_VERSION) $(MIGRATION_FLINK_VERSION) {}
	touch $@

$(LOCALBIN)/apache-flink-operator/$(APACHE_OPERATOR_VERSION)/.installed: hack/install-apache-operator.sh test/migration/testdata/pom.xml
	hack/cached.sh $(@D) hack/install-apache-operator.sh test/migration/testdata/pom.xml -- hack/install-apache-operator.sh $(APACHE_OPERATOR_VERSION) {}
	touch $@

.PHONY: golden
golden: ## Rewrite pkg/native's golden files (review the diff before committing).
	go test ./pkg/native -run TestGolden -count=1 -update

.PHONY: bench
bench: envtest-assets ## Scale benchmark (test/bench): N FlinkDeployments on a local API server, the operator beside the API-server-only limit; BENCH_N (1000), BENCH_CONCURRENCY (50), BENCH_STEADY (60s), BENCH_OUT (bin/bench/result.json); BENCH_RUNNING=1: jobs run on a fake Flink REST server, BENCH_UPGRADES (100) savepoint upgrades at once, BENCH_OBSERVE_INTERVAL / BENCH_PROGRESS_CHECK (operator defaults 60s / 10s).
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" \
		go run ./test/cmd/bench

.PHONY: bench-flink
bench-flink: $(GENERATE) cluster-assets flink-dist flink-cds ## The operator's cost on real Flink jobs (test/benchflink): BENCHFLINK_JOBS (3) checkpoint-ha jobs side by side on the local cluster, the operator with its defaults, created, upgraded (savepoint; last-state with Kubernetes HA), suspended and resumed; each flow's total, Flink's own part (its REST timestamps and checkpoint statistics) and the overhead, median of BENCHFLINK_RUNS (3); BENCHFLINK_OUT (bin/bench/flink-result.json).
	go run ./test/cmd/benchflink

.PHONY: bench-flink-smoke
bench-flink-smoke: $(GENERATE) cluster-assets flink-dist flink-cds ## make bench-flink once with one job (test/benchflink TestBenchFlinkSmoke): every flow measured, through each of its steps, and what Flink reports it did (the savepoint restored, the job id kept by last-state); no timing is asserted. Part of make test.
	go test -tags e2e ./test/benchflink -run TestBenchFlinkSmoke -count=1 -timeout 30m -v

.PHONY: bench-micro
bench-micro: ## Go micro-benchmarks.
	go test ./... -run '^$$' -bench . -benchmem

##@ Build

.PHONY: build
build: manifests generate kubectl-flink ## Build the manager binary and the kubectl flink plugin.
	go build -trimpath -o bin/manager ./cmd

# KUBECTL_FLINK_PLATFORMS are the platforms of the plugin's release archives (krew: hack/krew/flink.yaml).
KUBECTL_FLINK_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: kubectl-flink
kubectl-flink: ## Build the kubectl flink plugin (bin/kubectl-flink, one static binary: put it on the PATH as kubectl-flink).
	CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o bin/kubectl-flink ./cmd/kubectl-flink

.PHONY: kubectl-flink-dist
kubectl-flink-dist: ## The plugin's release archives for krew (bin/kubectl-flink-dist/kubectl-flink_<os>_<arch>.tar.gz with LICENSE) and their sha256 sums, which the release writes into hack/krew/flink.yaml.
	rm -rf bin/kubectl-flink-dist && mkdir -p bin/kubectl-flink-dist
	for p in $(KUBECTL_FLINK_PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; dir=bin/kubectl-flink-dist/$${os}_$${arch}; mkdir -p $$dir && cp LICENSE $$dir/ && \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $$dir/kubectl-flink ./cmd/kubectl-flink && \
		tar -C $$dir -czf bin/kubectl-flink-dist/kubectl-flink_$${os}_$${arch}.tar.gz kubectl-flink LICENSE || exit 1; \
	done
	cd bin/kubectl-flink-dist && sha256sum *.tar.gz > sha256sums.txt

.PHONY: run-local
# STORAGE: where run-local's sample keeps its state: volume (a hostPath volume,
# examples/checkpoint-ha) or s3 (an S3-compatible store and Flink's S3 plugin, examples/checkpoint-s3).
STORAGE ?= volume
run-local: manifests generate cluster-assets flink-dist $(if $(filter s3,$(STORAGE)),flink-opt) ## Try it on one machine: local cluster, real Flink, operator, a sample job (STORAGE=s3: its state in an S3-compatible store). Ctrl-C stops all.
	go build -o $(LOCALBIN)/runlocal ./test/cmd/runlocal
	$(LOCALBIN)/runlocal -storage $(STORAGE)

.PHONY: run
run: manifests generate ## Run the operator against the current kube context (see hack/run.sh).
	hack/run.sh

.PHONY: docker-build
docker-build: ## Build the operator image (needs a Docker engine).
	docker build -t $(IMG) .

##@ Images (OCI image layouts in bin/images, built without a container runtime; see docs/install/images.md)

# Bundle and catalog images live beside IMG's repository: registry/repo:tag -> registry/repo-bundle:vVERSION.
IMG_REPO = $(shell echo '$(IMG)' | sed -E 's/:[^:/]+$$//')
BUNDLE_IMG ?= $(IMG_REPO)-bundle:v$(VERSION)
CATALOG_IMG ?= $(IMG_REPO)-catalog:v$(VERSION)
IMAGES_DIR ?= $(LOCALBIN)/images
IMAGE_FLAGS = -version $(VERSION) -revision $$(git rev-parse HEAD 2>/dev/null || echo unknown)
# opm for the catalog image: static, as the image has no C library; every build here is
# (CGO_ENABLED=0 above).
OPM_STATIC ?= $(OPM)

.PHONY: image
image: ## Operator image: the static manager, the pinned CA bundle (hack/imagebuild/images/cacerts), user 65532 (bin/images/flink-operator).
	mkdir -p $(IMAGES_DIR)
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o $(IMAGES_DIR)/manager ./cmd
	go run ./hack/imagebuild operator -binary $(IMAGES_DIR)/manager \
		-image $(IMG) -out $(IMAGES_DIR)/flink-operator $(IMAGE_FLAGS)

# busybox for the local cluster (test/localenv): init containers that fetch a job's jar with wget
# and the storage provisioner's helper pods run it. Debian's statically linked busybox, from the
# package archive as apt-get downloads it, with a link per applet.
BUSYBOX_IMAGE ?= $(IMAGES_DIR)/busybox

.PHONY: busybox-image
busybox-image: $(BUSYBOX_IMAGE)/index.json ## busybox image for the local cluster's node: Debian's busybox-static with its applet links (bin/images/busybox).

$(BUSYBOX_IMAGE)/index.json: hack/imagebuild/main.go hack/imagebuild/images/busybox.go hack/imagebuild/images/layer.go
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	(cd "$$d" && apt-get download busybox-static) && deb=$$(echo "$$d"/busybox-static_*.deb) && dpkg-deb -x "$$deb" "$$d/root" && \
	version=$$(dpkg-deb -f "$$deb" Version | sed -E 's/^[0-9]+://; s/-.*//') && \
	go run ./hack/imagebuild busybox -binary "$$d/root/bin/busybox" -image docker.io/library/busybox:$$version -out $(BUSYBOX_IMAGE) \
		-version $$version -source https://packages.debian.org/source/stable/busybox -licenses GPL-2.0-only

.PHONY: bundle-image
bundle-image: image ## Bundle image from bundle.Dockerfile, its CSV naming the operator image by digest (bin/images/flink-operator-bundle).
	go run ./hack/imagebuild bundle -dockerfile bundle.Dockerfile -context . -operator $(IMAGES_DIR)/flink-operator \
		-image $(BUNDLE_IMG) -out $(IMAGES_DIR)/flink-operator-bundle

.PHONY: catalog-image
catalog-image: bundle-image $(OPM_STATIC) ## Catalog image: opm serve /configs over catalog/, this version pinned by digest (bin/images/flink-operator-catalog).
	go run ./hack/imagebuild catalog -opm $(OPM_STATIC) -dir catalog -bundle-name $(BUNDLE_PACKAGE).v$(VERSION) \
		-operator $(IMAGES_DIR)/flink-operator -bundle $(IMAGES_DIR)/flink-operator-bundle \
		-image $(CATALOG_IMG) -out $(IMAGES_DIR)/flink-operator-catalog $(IMAGE_FLAGS)

.PHONY: push
push: catalog-image ## Push the three images to IMG's registry (credentials of ~/.docker/config.json; not run in CI).
	go run ./hack/imagebuild push $(IMAGES_DIR)/flink-operator $(IMAGES_DIR)/flink-operator-bundle $(IMAGES_DIR)/flink-operator-catalog

##@ Deployment

.PHONY: install
install: manifests kustomize ## Install the CRDs into the cluster of the current kube context.
	$(KUSTOMIZE) build config/crd | kubectl apply --server-side -f -

.PHONY: uninstall
uninstall: manifests kustomize ## Remove the CRDs.
	$(KUSTOMIZE) build config/crd | kubectl delete --ignore-not-found -f -

## What `make deploy` installs: config/default (the operator issues its own webhook certificate)
## or config/certmanager (cert-manager's).
DEPLOY_CONFIG ?= config/default

.PHONY: deploy
deploy: manifests kustomize ## Install the operator (image IMG) into the cluster of the current kube context with kustomize, server-side; DEPLOY_CONFIG=config/certmanager takes cert-manager's webhook certificate.
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build $(DEPLOY_CONFIG) | kubectl apply --server-side -f -

.PHONY: deploy-multi-tenant
deploy-multi-tenant: ## make deploy with the hardened multi-tenant profile (config/profiles/multi-tenant): pod-security baseline, an Ingress annotation allowlist, an egress NetworkPolicy (review it first); undeploy with DEPLOY_CONFIG=config/profiles/multi-tenant.
	$(MAKE) deploy DEPLOY_CONFIG=config/profiles/multi-tenant

.PHONY: undeploy
undeploy: kustomize ## Remove what `make deploy` installed, CRDs included (delete the Flink resources first, while the operator runs to remove their finalizers).
	$(KUSTOMIZE) build $(DEPLOY_CONFIG) | kubectl delete --ignore-not-found -f -

##@ OLM

.PHONY: bundle
bundle: manifests kustomize ## Write bundle/ and bundle.Dockerfile from config/manifests (operator-sdk layout).
	cd config/manager && $(KUSTOMIZE) edit set image controller=$(IMG)
	$(KUSTOMIZE) build config/manifests | go run ./hack/bundle generate -package $(BUNDLE_PACKAGE) \
		-version $(VERSION) -replaces $(PREVIOUS_VERSION) -skip-range '$(SKIP_RANGE)' -image $(IMG) \
		-channels $(CHANNELS) -default-channel $(DEFAULT_CHANNEL)

.PHONY: bundle-validate
bundle-validate: envtest-assets ## Validate bundle/ with operator-framework/api's validators (default + operatorframework suite) and apply its alm-examples.
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" go test ./test/bundle -count=1 -v

.PHONY: catalog
catalog: bundle opm ## Render this version into the file-based catalog (catalog/), regenerate its channels, opm validate.
	mkdir -p catalog/$(BUNDLE_PACKAGE)/bundles
	$(OPM) render ./bundle --output yaml > catalog/$(BUNDLE_PACKAGE)/bundles/$(BUNDLE_PACKAGE).v$(VERSION).yaml
	go run ./hack/bundle index -package $(BUNDLE_PACKAGE) -dir catalog/$(BUNDLE_PACKAGE) \
		-channels $(CHANNELS) -default-channel $(DEFAULT_CHANNEL) -icon config/manifests/bases/icon.svg \
		-description "Runs Apache Flink jobs on Kubernetes with stateful upgrades, savepoints, rollback and suspend/resume."
	$(OPM) validate catalog

.PHONY: catalog-serve
catalog-serve: opm ## Serve the catalog over gRPC on :50051 (a CatalogSource's spec.address can point at it).
	$(OPM) serve catalog -p 50051 --pprof-addr=127.0.0.1:50052 -t /tmp/opm-termination.log

.PHONY: olm-tools
olm-tools: $(OPM) $(OLM) $(OLM_CATALOG) ## Build opm and OLM's olm and catalog operators.

.PHONY: opm
opm: $(OPM)

OLM_LDFLAGS = -X github.com/operator-framework/operator-lifecycle-manager/pkg/version.OLMVersion=$(OLM_VERSION)
# opm and OLM's two operators come from one module (hack/tools/olm: OLM's release requires the
# operator-registry release opm is from, OPM_VERSION) and one go build, as the Kubernetes
# binaries above: apart, the packages they share (Kubernetes' client libraries, the operator
# framework's API) were compiled twice. opm's build tags leave out what OLM's operators never use.
OLM_BINARIES = $(OPM) $(OLM) $(OLM_CATALOG)
$(OLM_BINARIES) &: hack/tools/olm/go.mod
	mkdir -p $(dir $(OLM))
	$(call cached-go-build-all,hack/tools/olm,$(LOCALBIN)/olm/build-$(OLM_VERSION),github.com/operator-framework/operator-registry/cmd/opm github.com/operator-framework/operator-lifecycle-manager/cmd/olm github.com/operator-framework/operator-lifecycle-manager/cmd/catalog,$(OLM_LDFLAGS),$(OPM_TAGS))
	ln -f $(LOCALBIN)/olm/build-$(OLM_VERSION)/opm $(OPM) && ln -f $(LOCALBIN)/olm/build-$(OLM_VERSION)/olm $(OLM) && \
		ln -f $(LOCALBIN)/olm/build-$(OLM_VERSION)/catalog $(OLM_CATALOG) && touch $(OLM_BINARIES)

##@ Tools

.PHONY: controller-gen
controller-gen: $(CONTROLLER_GEN)
$(CONTROLLER_GEN): | $(LOCALBIN)
	$(call go-install-tool,$(CONTROLLER_GEN),sigs.k8s.io/controller-tools/cmd/controller-gen,$(CONTROLLER_TOOLS_VERSION))

.PHONY: golangci-lint
golangci-lint: $(GOLANGCI_LINT)
$(GOLANGCI_LINT): | $(LOCALBIN)
	$(call go-install-tool,$(GOLANGCI_LINT),github.com/golangci/golangci-lint/v2/cmd/golangci-lint,$(GOLANGCI_LINT_VERSION))

.PHONY: crd-ref-docs
crd-ref-docs: $(CRD_REF_DOCS)
$(CRD_REF_DOCS): | $(LOCALBIN)
	$(call go-install-tool,$(CRD_REF_DOCS),github.com/elastic/crd-ref-docs,$(CRD_REF_DOCS_VERSION))

.PHONY: yq
yq: $(YQ) ## Build mikefarah's yq for upstream's e2e scripts (bin/yq-$(YQ_VERSION)).
$(YQ): | $(LOCALBIN)
	$(call go-install-tool,$(YQ),github.com/mikefarah/yq/v4,$(YQ_VERSION))

.PHONY: promtool
promtool: $(PROMTOOL)
# Without Prometheus's service discoveries (remove_all_sd; file, HTTP and Kubernetes stay), which
# the rule checks and tests do not use: the cloud providers' SDKs made promtool the longest build
# of a cold make test-deps (about 17 minutes on 2 cores, 3.7 with the tag and an empty build cache).
$(PROMTOOL): export GOFLAGS += -tags=remove_all_sd
$(PROMTOOL): | $(LOCALBIN)
	$(call go-install-tool,$(PROMTOOL),github.com/prometheus/prometheus/cmd/promtool,$(PROMTOOL_VERSION))

.PHONY: security-scorecard
security-scorecard: envtest-assets zookeeper ## Run the hostile-input tests (hack/securityscorecard/cases.go) and print the security scorecard of docs/security.md, counted from go test -json.
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" \
		go run ./hack/securityscorecard -out $(LOCALBIN)/security-scorecard.md

.PHONY: monitoring-test
monitoring-test: promtool ## promtool check/test of config/prometheus, and the dashboard and rules against the metrics the operator exposes.
	PROMTOOL=$(PROMTOOL) go test ./test/monitoring -count=1 -v
	KUBEBUILDER_ASSETS="$$($(ENVTEST) use $(ENVTEST_K8S_VERSION) --bin-dir $(LOCALBIN) -p path)" \
		go test ./cmd -run TestShippedMonitoringUsesExposedMetrics -count=1 -v

.PHONY: kustomize
kustomize: $(KUSTOMIZE)
$(KUSTOMIZE): | $(LOCALBIN)
	$(call go-install-tool,$(KUSTOMIZE),sigs.k8s.io/kustomize/kustomize/v5,$(KUSTOMIZE_VERSION))

.PHONY: setup-envtest
setup-envtest: $(ENVTEST)
$(ENVTEST): | $(LOCALBIN)
	$(call go-install-tool,$(ENVTEST),sigs.k8s.io/controller-runtime/tools/setup-envtest,$(ENVTEST_VERSION))

.PHONY: envtest-assets
envtest-assets: setup-envtest $(KUBE_APISERVER) $(ETCD) $(KUBECTL) ## Build kube-apiserver, etcd and kubectl for envtest.

# kube-apiserver, kubectl, the controller manager and the scheduler come from one module and are
# built by one go build: built side by side by separate go commands, each compiled the packages
# they share again (the Go build cache does not coordinate builds running at once), which on an
# empty cache took 2 cores 13.5 minutes against 8 for the one build.
KUBE_BINARIES = $(KUBE_APISERVER) $(KUBECTL) $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER)
$(KUBE_BINARIES) &: hack/tools/kube/go.mod
	mkdir -p $(ENVTEST_ASSETS_DIR)
	$(call cached-go-build-all,hack/tools/kube,$(LOCALBIN)/kube-build/$(K8S_VERSION),$(addprefix k8s.io/kubernetes/cmd/,$(notdir $(KUBE_BINARIES))),$(KUBE_VERSION_LDFLAGS))
	$(foreach b,$(KUBE_BINARIES),ln -f $(LOCALBIN)/kube-build/$(K8S_VERSION)/$(notdir $(b)) $(b) && ) touch $(KUBE_BINARIES)

# kube-apiserver and etcd of the oldest supported Kubernetes (K8S_OLDEST_VERSION), for envtest.
.PHONY: envtest-oldest-assets
envtest-oldest-assets: $(KUBE_APISERVER_OLDEST) $(ETCD_OLDEST)

# providerless: without the in-tree cloud providers (AWS, Azure, GCE, vSphere SDKs), which 1.28
# still links for admission plugins envtest never enables; Kubernetes' own build tag for clusters
# without them (removed from the tree since 1.31, so the current one has none).
$(KUBE_APISERVER_OLDEST): hack/tools/kube-oldest/go.mod
	mkdir -p $(ENVTEST_OLDEST_ASSETS_DIR)
	$(call cached-go-build,hack/tools/kube-oldest,k8s.io/kubernetes/cmd/kube-apiserver,$(KUBE_OLDEST_VERSION_LDFLAGS),providerless)

$(ETCD_OLDEST): $(ETCD)
	mkdir -p $(ENVTEST_OLDEST_ASSETS_DIR)
	cp $(ETCD) $@

.PHONY: cluster-assets
cluster-assets: envtest-assets $(KUBE_CONTROLLER_MANAGER) $(KUBE_SCHEDULER) $(LOCAL_PATH_PROVISIONER) busybox-image ## Build the local cluster's control plane (envtest's plus controller manager and scheduler), its storage provisioner and the busybox image its node runs busybox containers from.

$(LOCAL_PATH_PROVISIONER):
	mkdir -p $(ENVTEST_ASSETS_DIR)
	$(call go-install-tool,$@,github.com/rancher/local-path-provisioner,$(LOCAL_PATH_PROVISIONER_VERSION))

$(ETCD): hack/tools/etcd/go.mod
	mkdir -p $(ENVTEST_ASSETS_DIR)
	$(call cached-go-build,hack/tools/etcd,go.etcd.io/etcd/server/v3)

## The autoscaler tests' load-generator Flink job (test/loadgen): Flink's API from Maven Central as a
## provided dependency; Maven works offline when its local repository has everything.
LOADGEN_JAR = $(LOCALBIN)/loadgen/loadgen.jar

.PHONY: loadgen
loadgen: $(LOADGEN_JAR) ## Build the load-generator Flink job the autoscaler tests run (bin/loadgen/loadgen.jar).

$(LOADGEN_JAR): test/loadgen/pom.xml $(shell find test/loadgen/src -type f 2>/dev/null)
	mkdir -p $(dir $@)
	hack/cached.sh $@ test/loadgen/pom.xml test/loadgen/src -- sh -c 'cd test/loadgen && { mvn -B -q -o package 2>/dev/null || mvn -B -q package; } && cp target/loadgen.jar "$$1.tmp" && mv "$$1.tmp" "$$1"' loadgen {}

.PHONY: flink-cds
# Every Flink JVM the tests start maps its distribution's classes from a class-data sharing
# archive (test/flinkcluster/cds.go): a third less CPU per start, on a machine whose two cores
# the lanes keep busy. The archives are valid only for this JDK and these jar paths, so they
# are dumped in each clone (about 25 s of CPU per distribution, side by side), and again only
# when the JDK or a jar changes. Not for the migration test's Flink 1.18: it starts too few
# JVMs to pay back its dump.
flink-cds: flink-dist ## Dump the class-data sharing archives of the Flink distributions the tests run.
	go run ./test/cmd/flinkcds $(LOCALBIN)/flink/$(FLINK1_VERSION) $(LOCALBIN)/flink/$(FLINK2_VERSION)

.PHONY: flink-dist
flink-dist: $(LOCALBIN)/flink/$(FLINK1_VERSION)/.installed $(LOCALBIN)/flink/$(FLINK2_VERSION)/.installed ## Install the Flink distributions and example jobs the tests run.

$(LOCALBIN)/flink/$(FLINK1_VERSION)/.installed: hack/install-flink.sh
	hack/cached.sh $(@D) hack/install-flink.sh -- hack/install-flink.sh $(FLINK1_VERSION) $(FLINK1_EXAMPLES_VERSION) {}
	touch $@

$(LOCALBIN)/flink/$(FLINK2_VERSION)/.installed: hack/install-flink.sh
	hack/cached.sh $(@D) hack/install-flink.sh -- hack/install-flink.sh $(FLINK2_VERSION) $(FLINK2_EXAMPLES_VERSION) {}
	touch $@

zookeeper: $(ZOOKEEPER_DIR)/.installed ## Download Apache ZooKeeper's server and its dependencies (Maven) for the ZooKeeper HA tests.

$(ZOOKEEPER_DIR)/.installed: hack/zookeeper/pom.xml
	rm -rf $(ZOOKEEPER_DIR)
	hack/cached.sh $(ZOOKEEPER_DIR) hack/zookeeper/pom.xml -- mvn -q -B -f hack/zookeeper/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory={}
	touch $@

# The example job jars upstream's e2e manifests download (STREAMING_EXAMPLES_JAR_URL, which
# upstream's CI replaces with a Maven Central URL): the Flink 1.x one, the batch test's and the
# Flink 2.x one, named as Maven names them. From Maven, which reaches Central where plain HTTP may
# not. Upstream's versions are not all served by the registry here, so each is the nearest one
# served: flink-examples-streaming_2.12 1.15.3 for 1.14.4 (served: 1.7.1, 1.9.1, 1.15.3 to
# 1.17.1), flink-examples-streaming 1.20.0 for 1.20.4 and 2.3.0 for 2.0.0 (served: 1.18.1 to
# 1.20.0, 2.3.0).
UPSTREAM_E2E_JARS_DIR ?= $(LOCALBIN)/upstream-e2e/jars
UPSTREAM_E2E_JARS = $(addprefix $(UPSTREAM_E2E_JARS_DIR)/,flink-examples-streaming_2.12-1.15.3.jar \
	flink-examples-streaming-1.20.0.jar flink-examples-streaming-2.3.0.jar)

.PHONY: upstream-e2e-jars
upstream-e2e-jars: $(UPSTREAM_E2E_JARS) ## Download the example jobs upstream's e2e scripts run (org.apache.flink:flink-examples-streaming, Maven Central) into bin/upstream-e2e/jars.

# The file name is the artifact and its version (artifact-version.jar).
$(UPSTREAM_E2E_JARS_DIR)/%.jar:
	mkdir -p $(@D)
	hack/cached.sh $@ -- sh -c 'd=$$(mktemp -d) && mvn -B -q dependency:copy -Dartifact=org.apache.flink:$${1%-*}:$${1##*-}:jar -DoutputDirectory="$$d" && mv "$$d/$$1.jar" "$$2"; rc=$$?; rm -rf "$$d"; exit $$rc' upstream-e2e-jar $* {}

# What the Flink image has in /opt/flink/opt and the local cluster's Flink containers lack: Flink's
# S3 file system plugin, which a pod enables as on the image, with ENABLE_BUILT_IN_PLUGINS
# (test/nodeagent). From Maven Central; its nearest served version to the distribution's
# (flink-s3-fs-presto is served at 1.20.0, not 1.20.3: a plugin of the same minor version).
FLINK1_S3_PLUGIN_VERSION ?= 1.20.0
FLINK1_OPT_DIR = $(LOCALBIN)/flink-opt/$(FLINK1_VERSION)
FLINK1_S3_PLUGIN = $(FLINK1_OPT_DIR)/flink-s3-fs-presto-$(FLINK1_S3_PLUGIN_VERSION).jar

.PHONY: flink-opt
flink-opt: $(FLINK1_S3_PLUGIN) ## Download the Flink image's optional jars the tests enable (the S3 file system plugin) into bin/flink-opt/<version>.

$(FLINK1_S3_PLUGIN):
	mkdir -p $(@D)
	hack/cached.sh $@ -- sh -c 'd=$$(mktemp -d) && mvn -B -q dependency:copy -Dartifact=org.apache.flink:flink-s3-fs-presto:$$1:jar -DoutputDirectory="$$d" && mv "$$d/flink-s3-fs-presto-$$1.jar" "$$2"; rc=$$?; rm -rf "$$d"; exit $$rc' flink-s3-plugin $(FLINK1_S3_PLUGIN_VERSION) {}

# The SQL runner job (Maven; Flink's table API is provided by the image) and the PyFlink
# environment the SQL and Python examples run with in the e2e suite (TestSQLAndPythonJobs).
SQL_RUNNER_JAR := $(LOCALBIN)/examples/flink-sql-runner/usrlib/sql-runner.jar
.PHONY: examples
examples: $(SQL_RUNNER_JAR) $(LOCALBIN)/pyflink/$(FLINK1_VERSION)/.installed ## Build the SQL runner job and install PyFlink (PyPI apache-flink) for the examples in examples/flink-sql-runner and examples/flink-python.

$(SQL_RUNNER_JAR): examples/flink-sql-runner/pom.xml $(shell find examples/flink-sql-runner/src -type f 2>/dev/null)
	mkdir -p $(@D)
	hack/cached.sh $@ examples/flink-sql-runner/pom.xml examples/flink-sql-runner/src -- sh -c 'b=$$(mktemp -d) && mvn --batch-mode --quiet -f examples/flink-sql-runner/pom.xml package -Dflink.version=$$1 -Dbuild.dir=$$b && cp "$$b/sql-runner.jar" "$$2"; rc=$$?; rm -rf "$$b"; exit $$rc' sql-runner $(FLINK1_VERSION) {}

$(LOCALBIN)/pyflink/$(FLINK1_VERSION)/.installed: hack/install-pyflink.sh
	hack/cached.sh --link $(@D) hack/install-pyflink.sh -- hack/install-pyflink.sh $(FLINK1_VERSION) {}
	touch $@

# go-install-tool installs a Go package at a version into a versioned file name in bin/.
# cached-go-build builds package $(2) of the tool module $(1) with ldflags $(3) and tags $(4) into
# $@, once per machine: the binary is kept in the install cache (hack/cached.sh), keyed by the
# module's go.mod and go.sum, the flags and the Go version.
GOVERSION := $(shell go env GOVERSION)
OPM_TAGS := json1,containers_image_openpgp
define cached-go-build
hack/cached.sh $@ $(1)/go.mod $(1)/go.sum -- sh -c 'cd "$$1" && go build -ldflags "$$3" -tags "$$4" -o "$$6.tmp" "$$2" && mv "$$6.tmp" "$$6"' go-build $(1) $(2) '$(3)' '$(4)' $(GOVERSION) {}
endef

# cached-go-build-all builds the packages $(3) of the tool module $(1) with ldflags $(4) and tags
# $(5) in one go build into the directory $(2) (a binary per package, named as go build names
# it), once per machine, as cached-go-build.
define cached-go-build-all
hack/cached.sh $(2) $(1)/go.mod $(1)/go.sum -- sh -c 'cd "$$1" && rm -rf "$$6.tmp" && go build -ldflags "$$3" -tags "$$4" -o "$$6.tmp/" $$2 && rm -rf "$$6" && mv "$$6.tmp" "$$6"' go-build-all $(1) '$(3)' '$(4)' '$(5)' $(GOVERSION) {}
endef

define go-install-tool
@[ -f "$(1)" ] || { echo "Downloading $(2)@$(3)"; hack/cached.sh $(1) -- sh -c 'set -e; d=$$(mktemp -d); GOBIN=$$d go install "$$1"; mv "$$d"/* "$$3"; rm -rf "$$d"' go-install $(2)@$(3) $(GOVERSION) {}; }
endef
