{{/* Names, labels and the pieces both Deployments share. */}}

{{- define "switchboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchboard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: <fullname>-mcp or <fullname>-runs. */}}
{{- define "switchboard.componentName" -}}
{{- printf "%s-%s" (include "switchboard.fullname" .root | trunc 58 | trimSuffix "-") .component -}}
{{- end -}}

{{- define "switchboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "switchboard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "switchboard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The Secret the chart creates for values given inline (trials). */}}
{{- define "switchboard.inlineSecretName" -}}
{{- printf "%s-inline" (include "switchboard.fullname" .) -}}
{{- end -}}

{{- define "switchboard.image" -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .binary (default .root.Chart.AppVersion .root.Values.image.tag) -}}
{{- end -}}

{{/*
Refuses values that cannot work together; values.schema.json checks each
value alone.
*/}}
{{- define "switchboard.validate" -}}
{{- $v := .Values -}}
{{- if eq $v.database.kind "sqlite" -}}
{{- range $name, $svc := dict "mcpService" $v.mcpService "runsService" $v.runsService -}}
{{- if or (gt (int $svc.replicas) 1) $svc.autoscaling.enabled -}}
{{- fail (printf "%s: SQLite is single-replica only: set database.kind=postgres to run more than one replica or autoscale" $name) -}}
{{- end -}}
{{- end -}}
{{- else -}}
{{- range $name, $db := dict "mcp" $v.database.mcp "runs" $v.database.runs -}}
{{- if and (not $db.existingSecret) (not $db.url) -}}
{{- fail (printf "database.%s: PostgreSQL needs existingSecret (or url)" $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and $v.tls.certManager.enabled (not $v.tls.certManager.issuerRef.name) -}}
{{- fail "tls.certManager.enabled needs tls.certManager.issuerRef.name" -}}
{{- end -}}
{{- $mcpTls := include "switchboard.tlsSecret" (dict "root" . "component" "mcp") -}}
{{- $runsTls := include "switchboard.tlsSecret" (dict "root" . "component" "runs") -}}
{{- if and $mcpTls (not $runsTls) -}}
{{- fail "tls.mcpService.existingSecret needs tls.runsService.existingSecret too: runs-service verifies mcp-service with its ca.crt" -}}
{{- end -}}
{{- if and $v.tls.mutual (not $mcpTls) -}}
{{- fail "tls.mutual needs certificates: tls.mcpService.existingSecret and tls.runsService.existingSecret, or tls.certManager.enabled" -}}
{{- end -}}
{{- if eq $v.auth.mode "jwks" -}}
{{- if or (not $v.auth.jwks.url) (not $v.auth.issuer) (not $v.auth.audience) -}}
{{- fail "auth.mode=jwks needs auth.jwks.url, auth.issuer and auth.audience" -}}
{{- end -}}
{{- else if and (eq $v.auth.mode "rs256") (not $v.auth.rs256.existingSecret) -}}
{{- fail "auth.mode=rs256 needs auth.rs256.existingSecret" -}}
{{- end -}}
{{- end -}}

{{/*
What the chart's own Secret holds (YAML): values given inline, and for a
one-line install an HS256 secret, a sealing key and a key for the callers of
runs that continue, generated on the first install and read back from the
cluster on upgrades.
*/}}
{{- define "switchboard.inlineSecretData" -}}
{{- $v := .Values -}}
{{- $existing := dict -}}
{{- with lookup "v1" "Secret" .Release.Namespace (include "switchboard.inlineSecretName" .) -}}
{{- range $key, $value := .data -}}
{{- $_ := set $existing $key ($value | b64dec) -}}
{{- end -}}
{{- end -}}
{{- $data := dict -}}
{{- if and (eq $v.auth.mode "hs256") (not $v.auth.hs256.existingSecret) -}}
{{- $_ := set $data "jwt-secret" ($v.auth.hs256.value | default (get $existing "jwt-secret") | default (randAlphaNum 48)) -}}
{{- end -}}
{{- if not $v.sealingKeys.existingSecret -}}
{{- $generated := printf "generated:%s" (randBytes 32) -}}
{{- $_ := set $data "sealing-keys" ($v.sealingKeys.value | default (get $existing "sealing-keys") | default $generated) -}}
{{- end -}}
{{- $callerKeys := $v.runsService.recovery.callerKeys -}}
{{- if not $callerKeys.existingSecret -}}
{{- $generated := printf "generated:%s" (randBytes 32) -}}
{{- $_ := set $data "run-caller-keys" ($callerKeys.value | default (get $existing "run-caller-keys") | default $generated) -}}
{{- end -}}
{{- if eq $v.database.kind "postgres" -}}
{{- range $name := list "mcp" "runs" -}}
{{- $db := index $v.database $name -}}
{{- if and (not $db.existingSecret) $db.url -}}
{{- $_ := set $data (printf "%s-database-url" $name) $db.url -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toYaml $data -}}
{{- end -}}

{{/* An env entry read from a Secret: existing one, or the chart's inline one. */}}
{{- define "switchboard.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ default (include "switchboard.inlineSecretName" .root) .existingSecret }}
      key: {{ if .existingSecret }}{{ .key }}{{ else }}{{ .inlineKey }}{{ end }}
{{- end -}}

{{/* Settings both services read: auth, telemetry, limits, shutdown, storage. */}}
{{- define "switchboard.commonEnv" -}}
{{- $v := .root.Values -}}
- name: SWITCHBOARD_LISTEN_ADDR
  value: {{ printf "0.0.0.0:%d" (int .svc.port) | quote }}
- name: SWITCHBOARD_LOG_FORMAT
  value: json
- name: RUST_LOG
  value: {{ $v.telemetry.logFilter | quote }}
{{- with $v.telemetry.otlp.endpoint }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
  value: {{ $v.telemetry.captureContent | quote }}
{{- if $v.telemetry.metrics.enabled }}
- name: SWITCHBOARD_METRICS_ADDR
  value: {{ printf "0.0.0.0:%d" (int $v.telemetry.metrics.port) | quote }}
{{- end }}
- name: SWITCHBOARD_SHUTDOWN_DELAY
  value: {{ printf "%ds" (int $v.shutdown.delaySeconds) | quote }}
- name: SWITCHBOARD_DRAIN_TIMEOUT
  value: {{ printf "%ds" (int $v.shutdown.drainSeconds) | quote }}
- name: SWITCHBOARD_FIRST_REQUEST_TIMEOUT
  value: {{ $v.connections.firstRequestTimeout | quote }}
- name: SWITCHBOARD_CONNECTION_IDLE_TIMEOUT
  value: {{ $v.connections.idleTimeout | quote }}
{{- range $name, $cap := dict "SWITCHBOARD_MAX_CONNECTIONS" $v.connections.maxConnections "SWITCHBOARD_MAX_UNAUTHENTICATED_CONNECTIONS" $v.connections.maxUnauthenticated "SWITCHBOARD_MAX_UNAUTHENTICATED_CONNECTIONS_PER_IP" $v.connections.maxUnauthenticatedPerIp "SWITCHBOARD_MAX_CONNECTIONS_PER_ORG" $v.connections.maxPerOrg }}
{{- if $cap }}
- name: {{ $name }}
  value: {{ $cap | int | quote }}
{{- end }}
{{- end }}
- name: SWITCHBOARD_HTTP2_MAX_CONCURRENT_STREAMS
  value: {{ $v.connections.http2MaxConcurrentStreams | int | quote }}
- name: SWITCHBOARD_HTTP2_MAX_PENDING_RESET_STREAMS
  value: {{ $v.connections.http2MaxPendingResetStreams | int | quote }}
- name: SWITCHBOARD_HTTP2_MAX_LOCAL_ERROR_RESET_STREAMS
  value: {{ $v.connections.http2MaxLocalErrorResetStreams | int | quote }}
- name: SWITCHBOARD_HTTP2_MAX_HEADER_LIST_BYTES
  value: {{ $v.connections.http2MaxHeaderListBytes | int | quote }}
- name: SWITCHBOARD_ORG_CONCURRENCY_LIMIT
  value: {{ $v.orgLimits.concurrency | int | quote }}
- name: SWITCHBOARD_ORG_RATE_LIMIT
  value: {{ $v.orgLimits.ratePerSecond | int | quote }}
- name: SWITCHBOARD_ORG_RATE_BURST
  value: {{ $v.orgLimits.burst | int | quote }}
- name: SWITCHBOARD_ORG_QUEUE_WAIT
  value: {{ printf "%ds" (int $v.orgLimits.queueWaitSeconds) | quote }}
- name: SWITCHBOARD_ORG_RATE_REFUSAL_HOLD
  value: {{ printf "%dms" (int $v.orgLimits.refusalHoldMilliseconds) | quote }}
- name: SWITCHBOARD_ORG_RATE_HELD_REFUSALS
  value: {{ $v.orgLimits.heldRefusals | int | quote }}
- name: SWITCHBOARD_ORG_RATE_REFUSED_TOKENS
  value: {{ $v.orgLimits.refusedTokens | int | quote }}
{{- if $v.orgLimits.overrides }}
- name: SWITCHBOARD_ORG_LIMITS_FILE
  value: /etc/switchboard/org-limits/limits.toml
{{- end }}
- name: SWITCHBOARD_JWT_ORG_CLAIM
  value: {{ $v.auth.orgClaim | quote }}
- name: SWITCHBOARD_JWT_ROLES_CLAIM
  value: {{ $v.auth.rolesClaim | quote }}
{{- with $v.auth.issuer }}
- name: SWITCHBOARD_JWT_ISSUER
  value: {{ . | quote }}
{{- end }}
{{- with $v.auth.audience }}
- name: SWITCHBOARD_JWT_AUDIENCE
  value: {{ . | quote }}
{{- end }}
{{- if eq $v.auth.mode "jwks" }}
- name: SWITCHBOARD_JWT_JWKS_URL
  value: {{ $v.auth.jwks.url | quote }}
- name: SWITCHBOARD_JWT_JWKS_REFRESH_INTERVAL
  value: {{ $v.auth.jwks.refreshInterval | quote }}
- name: SWITCHBOARD_JWT_JWKS_MIN_REFRESH_INTERVAL
  value: {{ $v.auth.jwks.minRefreshInterval | quote }}
- name: SWITCHBOARD_JWT_JWKS_TIMEOUT
  value: {{ $v.auth.jwks.timeout | quote }}
- name: SWITCHBOARD_JWT_JWKS_MAX_BYTES
  value: {{ $v.auth.jwks.maxBytes | int | quote }}
{{- else if eq $v.auth.mode "hs256" }}
{{ include "switchboard.secretEnv" (dict "root" .root "name" "SWITCHBOARD_JWT_SECRET" "existingSecret" $v.auth.hs256.existingSecret "key" $v.auth.hs256.key "inlineKey" "jwt-secret") }}
{{- else }}
- name: SWITCHBOARD_JWT_PUBLIC_KEY_FILE
  value: {{ printf "/etc/switchboard/jwt/%s" $v.auth.rs256.key | quote }}
{{- end }}
{{ include "switchboard.storageEnv" . }}
{{- end -}}

{{/* Where a service keeps its data: PostgreSQL from a Secret, or SQLite on the data volume. */}}
{{- define "switchboard.storageEnv" -}}
{{- $v := .root.Values -}}
{{- if eq $v.database.kind "postgres" -}}
{{- $db := index $v.database .dbName -}}
{{ include "switchboard.secretEnv" (dict "root" .root "name" "DATABASE_URL" "existingSecret" $db.existingSecret "key" $db.key "inlineKey" (printf "%s-database-url" .dbName)) }}
{{- else -}}
- name: SWITCHBOARD_DATA_DIR
  value: /var/lib/switchboard
{{- end }}
- name: SWITCHBOARD_DB_MAX_CONNECTIONS
  value: {{ $v.database.maxConnections | int | quote }}
{{- end -}}

{{/* Every container: non-root, read-only root, nothing it does not need. */}}
{{- define "switchboard.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/*
The TLS Secret of one component (mcp or runs): the one cert-manager makes, or
the one named in the values; empty when the component serves plaintext.
Arguments: root, component.
*/}}
{{- define "switchboard.tlsSecret" -}}
{{- $tls := .root.Values.tls -}}
{{- if $tls.certManager.enabled -}}
{{- printf "%s-tls" (include "switchboard.componentName" (dict "root" .root "component" .component)) -}}
{{- else if eq .component "mcp" -}}
{{- $tls.mcpService.existingSecret -}}
{{- else -}}
{{- $tls.runsService.existingSecret -}}
{{- end -}}
{{- end -}}

{{/*
The TLS settings of one component's listener (YAML list), empty over
plaintext. Arguments: root, component.
*/}}
{{- define "switchboard.tlsEnv" -}}
{{- $tls := .root.Values.tls -}}
{{- if include "switchboard.tlsSecret" . }}
- name: SWITCHBOARD_TLS_CERT_FILE
  value: /etc/switchboard/tls/tls.crt
- name: SWITCHBOARD_TLS_KEY_FILE
  value: /etc/switchboard/tls/tls.key
- name: SWITCHBOARD_TLS_RELOAD_INTERVAL
  value: {{ $tls.reloadInterval | quote }}
- name: SWITCHBOARD_TLS_HANDSHAKE_TIMEOUT
  value: {{ $tls.handshakeTimeout | quote }}
{{- if and (eq .component "mcp") $tls.mutual }}
- name: SWITCHBOARD_TLS_CLIENT_CA_FILE
  value: /etc/switchboard/tls/ca.crt
{{- end }}
{{- if and (eq .component "runs") (include "switchboard.tlsSecret" (dict "root" .root "component" "mcp")) }}
- name: SWITCHBOARD_MCP_SERVICE_TLS_CA_FILE
  value: /etc/switchboard/tls/ca.crt
{{- if $tls.mutual }}
- name: SWITCHBOARD_MCP_SERVICE_TLS_CERT_FILE
  value: /etc/switchboard/tls/tls.crt
- name: SWITCHBOARD_MCP_SERVICE_TLS_KEY_FILE
  value: /etc/switchboard/tls/tls.key
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
