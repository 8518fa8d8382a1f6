{{/* The chart's name: the app.kubernetes.io/name label. */}}
{{- define "karpenter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: fullnameOverride, else the release name, with the chart's
name appended unless the release name already contains it. At most 63 characters (DNS labels).
*/}}
{{- define "karpenter.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the controller's pods; they never change across upgrades. */}}
{{- define "karpenter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "karpenter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "karpenter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "karpenter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "karpenter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "karpenter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The controller's image: repository@digest when a digest is set, else repository:tag. */}}
{{- define "karpenter.image" -}}
{{- $image := .Values.controller.image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/*
FEATURE_GATES (or AWS_FEATURE_GATES) from the mapping given (settings.featureGates): "Name=true,Other=false",
names capitalized (spotToSpotConsolidation → SpotToSpotConsolidation; draNVIDIAGPU → DRANVIDIAGPU
and draEFA → DRAEFA, as Karpenter's chart spells them), a null gate false, sorted. The
controller checks them against its table of gates (pkg/featuregate): a gate turned on whose
feature is not built stops it at start with a message naming the gate; one it does not know is
logged and ignored, as by Karpenter.
*/}}
{{- define "karpenter.featureGates" -}}
{{- $spelled := dict "draNVIDIAGPU" "DRANVIDIAGPU" "draEFA" "DRAEFA" }}
{{- $gates := list }}
{{- range $name, $enabled := . }}
{{- $gate := get $spelled $name | default (printf "%s%s" (substr 0 1 $name | upper) (substr 1 -1 $name)) }}
{{- $gates = append $gates (printf "%s=%t" $gate (and (kindIs "bool" $enabled) $enabled)) }}
{{- end }}
{{- join "," (sortAlpha $gates) }}
{{- end }}

{{/*
Karpenter v1.15's DRA settings resolved as its chart resolves them (karpenter.dra), as JSON:
settings.enableDRA turns on both AWS DRA gates (awsFeatureGates.draNVIDIAGPU and draEFA) and
cannot be combined with them or with ignoreDRARequests; ignoreDRARequests is true unless set,
and false when either DRA gate is on.
*/}}
{{- define "karpenter.dra" -}}
{{- $settings := .Values.settings }}
{{- $awsGates := default dict $settings.awsFeatureGates }}
{{- $gates := list "draNVIDIAGPU" "draEFA" }}
{{- if $settings.enableDRA }}
{{- $set := list }}
{{- range $gates }}
{{- if not (kindIs "invalid" (index $awsGates .)) }}
{{- $set = append $set (printf "settings.awsFeatureGates.%s" .) }}
{{- end }}
{{- end }}
{{- if not (kindIs "invalid" $settings.ignoreDRARequests) }}
{{- $set = append $set "settings.ignoreDRARequests" }}
{{- end }}
{{- if $set }}
{{- fail (printf "settings.enableDRA is mutually exclusive with %s: unset them, or unset settings.enableDRA" (join ", " $set)) }}
{{- end }}
{{- end }}
{{- $resolved := dict }}
{{- $anyGate := false }}
{{- range $gates }}
{{- $g := index $awsGates . }}
{{- $enabled := or (and (kindIs "bool" $settings.enableDRA) $settings.enableDRA) (and (kindIs "bool" $g) $g) }}
{{- $_ := set $resolved . $enabled }}
{{- $anyGate = or $anyGate $enabled }}
{{- end }}
{{- $ignore := ternary true $settings.ignoreDRARequests (kindIs "invalid" $settings.ignoreDRARequests) }}
{{- $_ := set $resolved "ignoreDRARequests" (and (not $anyGate) $ignore) }}
{{- toJson $resolved }}
{{- end }}

{{/*
settings.awsFeatureGates with the DRA gates as karpenter.dra resolves them, as JSON.
*/}}
{{- define "karpenter.awsFeatureGates" -}}
{{- $gates := deepCopy (default dict .Values.settings.awsFeatureGates) }}
{{- $dra := include "karpenter.dra" . | fromJson }}
{{- $_ := set $gates "draNVIDIAGPU" $dra.draNVIDIAGPU }}
{{- $_ = set $gates "draEFA" $dra.draEFA }}
{{- toJson $gates }}
{{- end }}

{{/*
CLUSTER_NAME: settings.clusterName, required with the aws cloud (as Karpenter's chart requires
it), so a release without it fails at `helm template`, not at the controller's start. Like the
other string settings it may be a template ({{ .Release.Name }}), as in Karpenter's chart.
*/}}
{{- define "karpenter.clusterName" -}}
{{- $name := tpl .Values.settings.clusterName . }}
{{- if eq .Values.cloudProvider "aws" }}
{{- required "settings.clusterName is required with cloudProvider=aws: set it to your cluster's name (--set settings.clusterName=my-cluster)" $name }}
{{- else }}
{{- $name }}
{{- end }}
{{- end }}

{{/*
The controller container's security context: .Values.securityContext with the keys of
controller.securityContext (appArmorProfile, seLinuxOptions, seccompProfile) that are set, as
Karpenter's chart adds them.
*/}}
{{- define "karpenter.securityContext" -}}
{{- $context := deepCopy (default dict .Values.securityContext) }}
{{- range $key, $value := (default dict .Values.controller.securityContext) }}
{{- if $value }}
{{- $_ := set $context $key $value }}
{{- end }}
{{- end }}
{{- with $context }}
{{- toYaml . }}
{{- end }}
{{- end }}

{{/*
The settings this controller cannot honour fail the release with a message saying why and what
to set instead; the ones without effect here are accepted with a warning in NOTES.txt.
*/}}
{{- define "karpenter.refusedSettings" -}}
{{- if and .Values.settings.enableZonalShift (eq .Values.cloudProvider "sim") }}
{{- fail "settings.enableZonalShift=true: ARC zonal shifts are AWS's, and the simulated cloud has none; set it to false, or cloudProvider to aws (docs/helm.md)" }}
{{- end }}
{{- if and .Values.settings.legacyNodeRepair (.Values.settings.featureGates).terminateFirstRepair }}
{{- fail "settings.legacyNodeRepair can't be combined with settings.featureGates.terminateFirstRepair: the legacy node repair controller doesn't support terminate-first repair" }}
{{- end }}
{{- $dra := include "karpenter.dra" . | fromJson }}
{{- if not $dra.ignoreDRARequests }}
{{- $why := "settings.ignoreDRARequests=false" }}
{{- if .Values.settings.enableDRA }}
{{- $why = "settings.enableDRA=true (it sets ignoreDRARequests to false)" }}
{{- else if or $dra.draNVIDIAGPU $dra.draEFA }}
{{- $why = "settings.awsFeatureGates.draNVIDIAGPU or draEFA=true (either sets ignoreDRARequests to false)" }}
{{- end }}
{{- fail (printf "%s: this controller's scheduling ignores pods' dynamic resource allocation (DRA) requests (DRA scheduling is not built); leave ignoreDRARequests unset or true and enableDRA off (a DRA gate may stay on with ignoreDRARequests: true, where it changes no scheduling, as in Karpenter) (docs/helm.md)" $why) }}
{{- end }}
{{- end }}

{{/*
A list of pod (anti-)affinity terms or topology spread constraints with the chart's pods as the
labelSelector of those that have none.
*/}}
{{- define "karpenter.withSelector" -}}
{{- $terms := list }}
{{- range .terms }}
{{- $term := deepCopy . }}
{{- if not (hasKey $term "labelSelector") }}
{{- $_ := set $term "labelSelector" (dict "matchLabels" (include "karpenter.selectorLabels" $.root | fromYaml)) }}
{{- end }}
{{- $terms = append $terms $term }}
{{- end }}
{{- toYaml $terms }}
{{- end }}

{{/*
The pods' affinity: .Values.affinity with the chart's pods as the labelSelector of every pod
(anti-)affinity term that has none.
*/}}
{{- define "karpenter.affinity" -}}
{{- $affinity := deepCopy .Values.affinity }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with index $affinity $kind }}
{{- $spec := . }}
{{- with $spec.requiredDuringSchedulingIgnoredDuringExecution }}
{{- $_ := set $spec "requiredDuringSchedulingIgnoredDuringExecution" (include "karpenter.withSelector" (dict "root" $ "terms" .) | fromYamlArray) }}
{{- end }}
{{- with $spec.preferredDuringSchedulingIgnoredDuringExecution }}
{{- $weighted := list }}
{{- range . }}
{{- $w := deepCopy . }}
{{- $_ := set $w "podAffinityTerm" (include "karpenter.withSelector" (dict "root" $ "terms" (list $w.podAffinityTerm)) | fromYamlArray | first) }}
{{- $weighted = append $weighted $w }}
{{- end }}
{{- $_ := set $spec "preferredDuringSchedulingIgnoredDuringExecution" $weighted }}
{{- end }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}
