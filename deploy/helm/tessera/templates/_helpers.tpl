{{/* Labels of every object: deploy/'s (app.kubernetes.io/part-of) and Helm's own. */}}
{{- define "tessera.labels" -}}
app.kubernetes.io/part-of: tessera
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The namespace of every namespaced object: namespaceOverride, else the release's. */}}
{{- define "tessera.namespace" -}}
{{- .Values.namespaceOverride | default .Release.Namespace -}}
{{- end }}

{{/*
The kube-scheduler image's tag: kubeScheduler.image.tag, else the cluster's version
(.Capabilities.KubeVersion, which `helm template` takes from --kube-version) without what a
distribution appends (v1.31.4-eks-..., v1.30.2+k3s1), so that the second kube-scheduler is as new
as the API server, as the version skew policy wants.
*/}}
{{- define "tessera.kubeSchedulerTag" -}}
{{- .Values.kubeScheduler.image.tag | default (regexFind "^v[0-9]+\\.[0-9]+\\.[0-9]+" .Capabilities.KubeVersion.Version) -}}
{{- end }}

{{/* The Secret of the annotation key the parts mount: annotationKey.existingSecret, else the one certgen makes. */}}
{{- define "tessera.annotationKeySecret" -}}
{{- .Values.annotationKey.existingSecret | default "tessera-annotation-key" -}}
{{- end }}

{{/*
The items of a mounted certificate Secret, as ca.crt, tls.crt and tls.key: certgen's keys are ca,
cert and key, cert-manager's ca.crt, tls.crt and tls.key.
*/}}
{{- define "tessera.tlsItems" -}}
{{- $cm := .Values.webhook.certManager.enabled -}}
- key: {{ ternary "ca.crt" "ca" $cm }}
  path: ca.crt
- key: {{ ternary "tls.crt" "cert" $cm }}
  path: tls.crt
- key: {{ ternary "tls.key" "key" $cm }}
  path: tls.key
{{- end }}

{{- define "tessera.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* The names of the Service the webhooks and kube-scheduler call, as certgen-job.yaml lists them. */}}
{{- define "tessera.serviceHosts" -}}
{{- $ns := include "tessera.namespace" . -}}
tessera-scheduler,tessera-scheduler.{{ $ns }},tessera-scheduler.{{ $ns }}.svc,tessera-scheduler.{{ $ns }}.svc.cluster.local,tessera-scheduler-extender.{{ $ns }}.svc,tessera-scheduler-extender.{{ $ns }}.svc.cluster.local,localhost,127.0.0.1
{{- end }}

{{/* Every resource of the enabled dialects, as a JSON list. */}}
{{- define "tessera.resources" -}}
{{- $r := list -}}
{{- with .Values.dialects.vgpu }}{{ if .enabled }}{{ $r = concat $r (list .countResource .memoryResource .memoryPercentageResource .coresResource) }}{{ end }}{{ end -}}
{{- with .Values.dialects.vcuda }}{{ if .enabled }}{{ $r = concat $r (list .coreResource .memoryResource) }}{{ end }}{{ end -}}
{{- with .Values.dialects.gpushare }}{{ if .enabled }}{{ $r = append $r .memoryResource }}{{ end }}{{ end -}}
{{- toJson $r -}}
{{- end }}

{{/* The same list as CEL: ['a', 'b']. */}}
{{- define "tessera.resourcesCel" -}}
[{{ range $i, $r := include "tessera.resources" . | fromJsonArray }}{{ if $i }}, {{ end }}'{{ $r }}'{{ end }}]
{{- end }}

{{/*
Flags of a part (scheduler or node) for the dialect values that differ from the part's built-in
defaults (docs/config-reference.md): at the defaults none, as in deploy/.
*/}}
{{- define "tessera.dialectArgs" -}}
{{- $d := .root.Values.dialects -}}
{{- $flags := list -}}
{{- if eq .part "scheduler" -}}
{{- $flags = list
  (list "vgpu.enabled" $d.vgpu.enabled true)
  (list "vgpu.count-resource" $d.vgpu.countResource "nvidia.com/gpu")
  (list "vgpu.memory-resource" $d.vgpu.memoryResource "nvidia.com/gpumem")
  (list "vgpu.memory-percentage-resource" $d.vgpu.memoryPercentageResource "nvidia.com/gpumem-percentage")
  (list "vgpu.cores-resource" $d.vgpu.coresResource "nvidia.com/gpucores")
  (list "vcuda.enabled" $d.vcuda.enabled true)
  (list "vcuda.core-resource" $d.vcuda.coreResource "tencent.com/vcuda-core")
  (list "vcuda.memory-resource" $d.vcuda.memoryResource "tencent.com/vcuda-memory")
  (list "gpushare.enabled" $d.gpushare.enabled true)
  (list "gpushare.memory-resource" $d.gpushare.memoryResource "aliyun.com/gpu-mem") -}}
{{- else -}}
{{- $flags = list
  (list "vgpu.enabled" $d.vgpu.enabled true)
  (list "vgpu.resource" $d.vgpu.countResource "nvidia.com/gpu")
  (list "vcuda.enabled" $d.vcuda.enabled true)
  (list "vcuda.core-resource" $d.vcuda.coreResource "tencent.com/vcuda-core")
  (list "vcuda.memory-resource" $d.vcuda.memoryResource "tencent.com/vcuda-memory")
  (list "gpushare.enabled" $d.gpushare.enabled true)
  (list "gpushare.resource" $d.gpushare.memoryResource "aliyun.com/gpu-mem") -}}
{{- end -}}
{{- range $flags }}
{{- if ne (toString (index . 1)) (toString (index . 2)) }}
- --{{ $.part }}.dialects.{{ index . 0 }}={{ index . 1 }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The pod template's labels and annotations: the part's own (`labels`, `annotations`, dicts) and,
added to them, the part's podLabels and podAnnotations values.
*/}}
{{- define "tessera.podMetadata" -}}
labels:
  {{- toYaml (merge (dict) .labels (.values.podLabels | default dict)) | nindent 2 }}
{{- with merge (dict) (.annotations | default dict) (.values.podAnnotations | default dict) }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The pod's priorityClassName, runtimeClassName and securityContext, nodeSelector, tolerations,
affinity and imagePullSecrets, from a part's values.
*/}}
{{- define "tessera.placement" -}}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .values.runtimeClassName }}
runtimeClassName: {{ . }}
{{- end }}
{{- with .values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* node.mode, refused unless device-plugin or dra (a typo would silently keep the plugins). */}}
{{- define "tessera.nodeMode" -}}
{{- if not (has .Values.node.mode (list "device-plugin" "dra")) }}
{{- fail (printf "node.mode: %q is not a mode; use device-plugin or dra" .Values.node.mode) }}
{{- end }}
{{- .Values.node.mode }}
{{- end }}
