SELECT origin, COUNT(*) AS n FROM flights WHERE hour BETWEEN 17 AND 19  GROUP BY origin
