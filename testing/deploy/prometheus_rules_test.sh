#!/usr/bin/env bash
# deploy/prometheus/tessera-rules.yaml is valid for Prometheus and gives HAMi's names and labels:
# Prometheus' own promtool checks it and evaluates tessera_rules_test.yaml against it, and the
# Helm chart ships it unchanged.
#   prometheus_rules_test.sh SOURCE_DIR
set -euo pipefail
src=$1
bin=$("$src/testing/cluster/build-components" --print) || {
  echo "FAIL: promtool is not built (testing/cluster/build-components builds it; make test does)" >&2
  exit 1
}
"$bin/promtool" check rules "$src/deploy/prometheus/tessera-rules.yaml"
cd "$src/testing/deploy"
"$bin/promtool" test rules tessera_rules_test.yaml

# The chart's PrometheusRule carries exactly that file as its spec.
"$bin/helm" template tessera "$src/deploy/helm/tessera" --kube-version 1.36.3 \
  --set metrics.prometheusRule.enabled=true --show-only templates/prometheusrule.yaml 2>/dev/null |
  awk 'spec { print substr($0, 3) } /^spec:$/ { spec = 1 }' >"${TMPDIR:-/tmp}/tessera-rules.$$"
trap 'rm -f "${TMPDIR:-/tmp}/tessera-rules.$$"' EXIT
diff -u "$src/deploy/prometheus/tessera-rules.yaml" "${TMPDIR:-/tmp}/tessera-rules.$$" || {
  echo "FAIL: the chart's PrometheusRule (metrics.prometheusRule.enabled) is not deploy/prometheus/tessera-rules.yaml" >&2
  exit 1
}
echo "the chart's PrometheusRule carries the rules"
