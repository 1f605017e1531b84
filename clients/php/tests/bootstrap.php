<?php

declare(strict_types=1);

// The PSR-4 map of composer.json without Composer: Verdict\ => src/, Verdict\Tests\ => tests/.
spl_autoload_register(static function (string $class): void {
    foreach (['Verdict\\Tests\\' => __DIR__ . '/', 'Verdict\\' => \dirname(__DIR__) . '/src/'] as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, \strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});
