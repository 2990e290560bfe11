# OPA's default decision (POST /): the AdmissionReview answer for the mutating webhook.
# METADATA
# title: Webhook entry point
# description: >-
#   The document the API server's webhook call evaluates (OPA's default decision).
package system

import rego.v1

# METADATA
# entrypoint: true
main := data.greenops.admission.main
