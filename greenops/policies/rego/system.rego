# OPA's default decision (POST /): the AdmissionReview answer for the mutating webhook.
package system

import rego.v1

main := data.greenops.admission.main
