use secrecy::{ExposeSecret, Secret};
use serde::Deserialize;

#[derive(Deserialize)]
pub struct Settings {
    pub database_url: String,
    pub api_token: Secret<String>,
    pub password: Secret<String>,
}

impl Settings {
    pub fn auth_header(&self) -> String {
        format!("Bearer {}", self.api_token.expose_secret())
    }
}

fn main() {
    let settings: Settings = config::Config::builder()
        .add_source(config::Environment::with_prefix("APP"))
        .build()
        .unwrap()
        .try_deserialize()
        .unwrap();
    let token = settings.api_token.expose_secret();
    println!("token length: {}", token.len());
}
