public sealed class SmtpOptions
{
    public const string Section = "Smtp";
    public string Host { get; init; } = "localhost";
    public int Port { get; init; } = 587;
    public string UserName { get; init; } = string.Empty;
    public string Password { get; init; } = string.Empty;
}

var builder = WebApplication.CreateBuilder(args);
builder.Services.Configure<SmtpOptions>(builder.Configuration.GetSection(SmtpOptions.Section));
var apiKey = builder.Configuration["OpenAI:ApiKey"] ?? throw new InvalidOperationException("OpenAI:ApiKey missing");
var password = Environment.GetEnvironmentVariable("SMTP_PASSWORD");
