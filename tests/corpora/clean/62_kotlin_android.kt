class AuthRepository(
    private val api: AuthApi,
    private val tokenStore: TokenStore,
) {
    suspend fun login(email: String, password: String): Result<Unit> = runCatching {
        val response = api.login(LoginRequest(email = email, password = password))
        tokenStore.save(accessToken = response.accessToken, refreshToken = response.refreshToken)
    }

    fun authHeader(): String? = tokenStore.accessToken?.let { "Bearer $it" }
}

val apiKey = BuildConfig.MAPS_API_KEY
val secret = remoteConfig.getString("feature_secret_flag")
