SELECT origin, COUNT(*) AS n FROM flights WHERE hour BETWEEN 17 AND 19  AND NOT (month = 12 AND day >= 20) GROUP BY origin
