variable "db_password" {
  description = "Master password for the RDS instance"
  type        = string
  sensitive   = true
}

resource "aws_db_instance" "main" {
  identifier        = "main"
  engine            = "postgres"
  engine_version    = "15.5"
  instance_class    = "db.t4g.medium"
  username          = "app_admin"
  password          = var.db_password
  kms_key_id        = aws_kms_key.rds.arn
  storage_encrypted = true
}

resource "aws_secretsmanager_secret_version" "db" {
  secret_id     = aws_secretsmanager_secret.db.id
  secret_string = jsonencode({ username = "app_admin", password = var.db_password })
}
