package config

import (
	"fmt"
	"os"
)

type Config struct {
	DatabaseURL string `env:"DATABASE_URL,required"`
	Password    string `env:"DB_PASSWORD" json:"-"`
	APIKey      string `env:"API_KEY"`
	TokenTTL    int    `env:"TOKEN_TTL" envDefault:"3600"`
}

func Load() (*Config, error) {
	password := os.Getenv("DB_PASSWORD")
	if password == "" {
		return nil, fmt.Errorf("DB_PASSWORD is not set")
	}
	apiKey := os.Getenv("API_KEY")
	return &Config{Password: password, APIKey: apiKey}, nil
}
