output "function_urls" {
  description = "URL of each function, by entry point. Browsers call Turn, ToolResult and Pending."
  value       = { for name, f in google_cloud_run_v2_service.fn : name => f.uri }
}

output "turn_url" {
  description = "URL of Turn (POST a chat turn)."
  value       = google_cloud_run_v2_service.fn["Turn"].uri
}

output "tool_result_url" {
  description = "URL of ToolResult (POST the result of a browser tool or an approval)."
  value       = google_cloud_run_v2_service.fn["ToolResult"].uri
}

output "chat_url" {
  description = "URL of Chat (the api option of the AI SDK's useChat / DefaultChatTransport)."
  value       = google_cloud_run_v2_service.fn["Chat"].uri
}

output "pending_url" {
  description = "URL of Pending (the calls of a session still waiting for an answer)."
  value       = google_cloud_run_v2_service.fn["Pending"].uri
}

output "a2a_url" {
  description = "URL of A2A (JSON-RPC); its agent card is at <url>/.well-known/agent-card.json."
  value       = google_cloud_run_v2_service.fn["A2A"].uri
}

output "a2a_audience" {
  description = "Audience service callers' OIDC tokens must carry for A2A, equal to BATON_A2A_AUDIENCE."
  value       = local.a2a_audience
}

output "sweep_audience" {
  description = "Audience of the scheduler's OIDC token, equal to BATON_SWEEP_AUDIENCE."
  value       = local.sweep_audience
}

output "runtime_service_account" {
  description = "Email of the functions' service account."
  value       = google_service_account.runtime.email
}

output "image" {
  description = "The image every function runs, tagged with the archive's SHA-256."
  value       = terraform_data.image.output
}

output "source_object" {
  description = "The uploaded archive, named by its SHA-256."
  value       = "gs://${google_storage_bucket.source.name}/${google_storage_bucket_object.source.name}"
}

output "admin_url" {
  description = "The operator's console: open <url>/admin (docs/operator.md)."
  value       = "${google_cloud_run_v2_service.fn["Admin"].uri}/admin"
}
