terraform {
  # 1.11: write-only arguments (the token key never enters the state).
  required_version = ">= 1.11"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 7.0, < 8.0"
    }
    random = {
      source  = "hashicorp/random"
      version = ">= 3.7" # ephemeral random_password
    }
  }
}

provider "google" {
  project = var.project
  region  = var.region
}
