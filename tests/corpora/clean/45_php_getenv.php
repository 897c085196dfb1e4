<?php
declare(strict_types=1);

$dsn = sprintf('pgsql:host=%s;dbname=%s', getenv('DB_HOST'), getenv('DB_NAME'));
$password = getenv('DB_PASSWORD');
$pdo = new PDO($dsn, getenv('DB_USER'), $password, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);

$hash = password_hash($_POST['password'], PASSWORD_ARGON2ID);
if (!password_verify($_POST['password'], $user['password_hash'])) {
    http_response_code(401);
    exit('invalid credentials');
}
define('DB_PASSWORD', getenv('WORDPRESS_DB_PASSWORD'));
