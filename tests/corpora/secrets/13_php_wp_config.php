---
kinds: password_assignment
---
<?php
/** The name of the database for WordPress */
define( 'DB_NAME', 'wp_blog' );
define( 'DB_USER', 'wp_admin' );
define( 'DB_PASSWORD', '{{human_password}}' );
define( 'DB_HOST', 'localhost' );
define( 'DB_CHARSET', 'utf8mb4' );

define( 'AUTH_KEY',         '{{password}}' );
define( 'SECURE_AUTH_KEY',  '{{password#2}}' );
define( 'NONCE_SALT',       'put your unique phrase here' );

$table_prefix = 'wp_';
